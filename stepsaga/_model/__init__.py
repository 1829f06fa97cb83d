"""Private: the values a case is made of (case, approval time, person, money, inputs,
references). The public names are re-exported by ``stepsaga``."""
