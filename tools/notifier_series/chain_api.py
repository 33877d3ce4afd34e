"""The names of the notifier chain API, written once: the kinds of head,
the operations every kind has (`<kind>_notifier_<op>`, and `notifier_<op>`
for the 2005 API and the core patch's), and the kinds the conversion
replaces.  The regular expressions of the tools that name the API
(chains.py, convert.py, evidence.py, headcost.py, lexfacts.py,
rulechecks.py) and the renames of cocci/notifier_convert.cocci are made
from them; tests/test_chain_api.py checks the semantic patches' own
regular expressions and identifier lists against them."""

KINDS = ("atomic", "blocking", "raw", "srcu")
# The typed API that the series converts and then removes, and the kinds
# it leaves as they are.
CONVERTED = ("atomic", "blocking")
LEFT = tuple(k for k in KINDS if k not in CONVERTED)
# Each operation and what it does to a chain.
OPS = {"chain_register_unique_prio": "register",
       "chain_register": "register", "chain_unregister": "unregister",
       "call_chain_robust": "call", "call_chain": "call",
       "call_chain_is_empty": "is_empty"}
# The operations of the 2005 API on a bare struct notifier_block * head,
# whose names the core patch gives to struct notifier_head's.
BARE_OPS = ("chain_register", "chain_unregister", "call_chain")


def alternation(words):
    """A regular expression's alternation of `words`, longest first."""
    return "|".join(sorted(words, key=lambda w: (-len(w), w)))


def typed(kinds=CONVERTED, ops=OPS):
    """The typed API's functions, `<kind>_notifier_<op>`."""
    return [f"{k}_notifier_{op}" for k in kinds for op in ops]


def renames():
    """{typed function's operation: its name on struct notifier_head}."""
    return {op: "notifier_" + op for op in OPS}
