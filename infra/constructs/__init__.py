"""One construct per concern of the stack; ``infra/stack.py`` wires them together."""
