"""Where a reference backend deviates from AWS's documentation and a test of more than one
module meets it: the reason, once (``@pytest.mark.deviates(localstack=…)`` quotes it)."""

#: The multi-warehouse saga's group outcome reads ``$[*].failure`` of its branches.
LOCALSTACK_SINGLE_MATCH = (
    "LocalStack deviates from AWS: a JSONPath with a wildcard that matches one value yields "
    "that value there, not a list (ResultSelector 'failures.$': '$[*].failure' gives the "
    "object, failures[0] is absent, the saga completes). AWS documents that paths follow "
    "JsonPath syntax, in which a path with a wildcard is indefinite and yields an array of "
    "its matches, one match included (the engine and moto give [failure])"
)
