"""Private: the code that runs on AWS beside the saga (ingress, auto-redrive, resolver,
audit copy) and its plumbing (region, secrets, request signing, metric names). The entry
points are ``stepsaga.lambdas``."""
