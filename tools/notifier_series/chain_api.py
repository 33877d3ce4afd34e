"""The names of the notifier chain API, written once: the kinds of head,
the operations every kind has (`<kind>_notifier_<op>`, and `notifier_<op>`
for the 2005 API and the core patch's), and the kinds the conversion
replaces.  The regular expressions of chains.py and convert.py are made
from them."""

KINDS = ("atomic", "blocking", "raw", "srcu")
# The typed API that the series converts and then removes.
CONVERTED = ("atomic", "blocking")
# Each operation and what it does to a chain.
OPS = {"chain_register_unique_prio": "register",
       "chain_register": "register", "chain_unregister": "unregister",
       "call_chain_robust": "call", "call_chain": "call",
       "call_chain_is_empty": "is_empty"}


def alternation(words):
    """A regular expression's alternation of `words`, longest first."""
    return "|".join(sorted(words, key=lambda w: (-len(w), w)))
