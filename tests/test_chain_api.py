"""The chain API's names, written once in chain_api.py: the regular
expressions the tools make from them, and those the semantic patches
write out, which SmPL cannot take from Python, checked against them."""

import glob
import json
import os
import re
import tempfile
import unittest
from unittest import mock

from notifier_series import chain_api, convert, evidence, rulechecks
from notifier_series.chain_api import BARE_OPS, CONVERTED, KINDS, OPS
from notifier_series.tree import REPO

# A kind, an operation and a macro that the API does not have: a regular
# expression that matches them names more than the API.
UNKNOWN_KIND, UNKNOWN_OP = "foo", "call_chain_twice"


def names():
    """Every name of the API, and names one change away from one."""
    kinds, ops = (*KINDS, UNKNOWN_KIND), (*OPS, UNKNOWN_OP)
    found = set(chain_api.typed(kinds, ops))
    found |= {"notifier_" + op for op in ops}
    for k in kinds:
        found |= {f"{k}_notifier_head", f"{k.upper()}_NOTIFIER_INIT",
                  f"{k.upper()}_INIT_NOTIFIER_HEAD"}
    return found | {"notifier_head"}


def registers(ops):
    return [op for op in ops if OPS[op] in ("register", "unregister")]


def calls_and_writes(ops):
    return [op for op in ops if OPS[op] != "is_empty"]


def bare(ops):
    return {"notifier_" + op for op in ops if op in BARE_OPS}


# What each regular expression of the semantic patches that names the API
# may match, made from chain_api: (what it is, the names).
EXPECTED = [
    ("the typed API and the 2005 one",
     {*chain_api.typed(KINDS), *bare(OPS)}),
    ("the typed API but the emptiness test, and the 2005 one",
     {*chain_api.typed(KINDS, calls_and_writes(OPS)), *bare(OPS)}),
    ("the converted typed API",
     set(chain_api.typed())),
    ("the converted typed API but the emptiness test, and the 2005 one",
     {*chain_api.typed(CONVERTED, calls_and_writes(OPS)), *bare(OPS)}),
    ("the converted writers, and the 2005 ones",
     {*chain_api.typed(CONVERTED, registers(OPS)), *bare(registers(OPS))}),
    ("the robust call of the converted blocking chains",
     {"blocking_notifier_call_chain_robust", "notifier_call_chain_robust"}),
    ("every kind's head", {f"{k}_notifier_head" for k in KINDS}),
    ("the converted heads", {f"{k}_notifier_head" for k in CONVERTED}),
    ("the converted heads, and notifier_head",
     {f"{k}_notifier_head" for k in CONVERTED} | {"notifier_head"}),
    ("the converted static initialisers",
     {f"{k.upper()}_NOTIFIER_INIT" for k in CONVERTED}),
    ("the converted run-time initialisers",
     {f"{k.upper()}_INIT_NOTIFIER_HEAD" for k in CONVERTED}),
]
METAVARIABLE = re.compile(r'^identifier\s+(\w+)\s*=~\s*"([^"]*)"')
# A wrapper's name: the rule checks that take any registration function
# match it, and are not about the chain API's own names.
WRAPPER = "register_reboot_notifier"


def smpl_regexes():
    """(file:line, (file, rule, metavariable), regular expression) of the
    semantic patches' identifier constraints that name the API, but for
    those that match any registration function.  An unnamed rule is
    named by its first word ("depends")."""
    found = []
    for path in sorted(glob.glob(os.path.join(REPO, "cocci", "*.cocci"))):
        rule = None
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                header = re.match(r"^@\s*(\w+)", line)
                rule = header.group(1) if header else rule
                m = METAVARIABLE.match(line.strip())
                if (m and "notifier" in m.group(2).lower()
                        and not re.search(m.group(2), WRAPPER)):
                    found.append((f"{os.path.relpath(path, REPO)}:{number}",
                                  (os.path.basename(path), rule, m.group(1)),
                                  m.group(2)))
    return found


# What each of them names: (file, rule, metavariable) -> EXPECTED's.
ROLES = {
    ("notifier_convert.cocci", "variable_seen", "K"):
        "the converted heads, and notifier_head",
    ("notifier_convert.cocci", "member_seen", "K"):
        "the converted heads, and notifier_head",
    ("notifier_convert.cocci", "init_static_seen", "I"):
        "the converted static initialisers",
    ("notifier_convert.cocci", "init_typed", "I"):
        "the converted run-time initialisers",
    ("notifier_convert.cocci", "init_seen", "I"):
        "the converted run-time initialisers",
    ("notifier_convert.cocci", "robust", "R"):
        "the robust call of the converted blocking chains",
    ("notifier_convert.cocci", "lock_sect", "f1"):
        "the converted typed API but the emptiness test, and the 2005 one",
    ("notifier_convert.cocci", "lock_sect", "f2"):
        "the converted typed API but the emptiness test, and the 2005 one",
    ("notifier_convert.cocci", "init", "I"):
        "the converted run-time initialisers",
    ("notifier_convert.cocci", "init_static", "I"):
        "the converted static initialisers",
    ("notifier_convert.cocci", "excluded_variable", "K"):
        "the converted heads",
    ("notifier_convert.cocci", "excluded_member", "K"):
        "the converted heads",
    ("notifier_convert.cocci", "depends", "K"): "the converted heads",
    ("notifier_convert.cocci", "depends", "f"): "the converted typed API",
    ("notifier_evidence.cocci", "head_extern", "K"): "every kind's head",
    ("notifier_evidence.cocci", "head_var", "K"): "every kind's head",
    ("notifier_evidence.cocci", "head_member", "K"): "every kind's head",
    ("notifier_evidence.cocci", "head_member_array", "K"):
        "every kind's head",
    ("notifier_evidence.cocci", "head_anonymous", "K"): "every kind's head",
    ("notifier_evidence.cocci", "site", "api"):
        "the typed API and the 2005 one",
    ("notifier_evidence.cocci", "site_ptr_type", "api"):
        "the typed API and the 2005 one",
    ("notifier_evidence.cocci", "site_obj_type", "api"):
        "the typed API and the 2005 one",
    ("notifier_evidence.cocci", "writer_wrapper", "api"):
        "the converted writers, and the 2005 ones",
    ("notifier_evidence.cocci", "atomic_region", "api"):
        "the typed API but the emptiness test, and the 2005 one",
}


LISTED = re.compile(r"^identifier (\w+) = \{(.*)\};$")


def smpl_lists():
    """(file:line, names) of the semantic patches' identifier lists that
    name the API."""
    found = []
    for path in sorted(glob.glob(os.path.join(REPO, "cocci", "*.cocci"))):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = LISTED.match(line.strip())
                if m and "notifier" in m.group(2):
                    found.append((f"{os.path.relpath(path, REPO)}:{number}",
                                  [n.strip() for n in m.group(2).split(",")]))
    return found


class SmplTest(unittest.TestCase):
    def test_each_listed_name_is_one_of_the_api(self):
        lists = smpl_lists()
        self.assertTrue(lists)
        known = names() - set(chain_api.typed((UNKNOWN_KIND,))) - {
            n for n in names() if n.endswith(UNKNOWN_OP)}
        for where, listed in lists:
            for name in listed:
                self.assertIn(name, known, f"{where}: {name} is not a name "
                              "of the chain API (chain_api.py)")

    def test_every_regex_naming_the_api_is_read(self):
        # A constraint the test's pattern did not read would go unchecked.
        for path in sorted(glob.glob(os.path.join(REPO, "cocci",
                                                  "*.cocci"))):
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if "=~" in line and "notifier" in line.lower():
                        self.assertTrue(METAVARIABLE.match(line.strip()),
                                        f"{path}:{number}")

    def test_each_regex_matches_its_set_made_from_chain_api(self):
        regexes = smpl_regexes()
        self.assertGreater(len(regexes), 20)
        sets = dict(EXPECTED)
        for where, key, regex in regexes:
            self.assertIn(key, ROLES, f"{where}: {regex} names the chain "
                          "API; say in ROLES what it matches")
            matched = {n for n in names() if re.search(regex, n)}
            self.assertTrue(matched == sets[ROLES[key]],
                            f"{where}: {regex} does not match "
                            f"{ROLES[key]}: it misses "
                            f"{sorted(sets[ROLES[key]] - matched)} and "
                            f"matches {sorted(matched - sets[ROLES[key]])}")

    def test_a_kind_missing_from_a_regex_is_found(self):
        # The buggy variant: a semantic patch that forgets SRCU chains.
        regex = ("^((atomic|blocking|raw)_notifier_(chain_register|"
                 "chain_unregister|call_chain))$")
        matched = {n for n in names() if re.search(regex, n)}
        self.assertNotIn(frozenset(matched),
                         [frozenset(s) for _, s in EXPECTED])


class ToolRegexTest(unittest.TestCase):
    """The tools' regular expressions, made from chain_api, on every name
    of the API and the names one change away from one."""

    def test_bare_call(self):
        for name in names():
            found = [m.groups() for m in convert.BARE_CALL.finditer(
                f"\tret = {name}(&head, nb);\n")]
            self.assertEqual(found, [(name, "head")] if name in bare(OPS)
                             else [], name)

    def test_evidence_files(self):
        # Every name of the API, by the infix of any kind's operation.
        for name in chain_api.typed(KINDS) + sorted(bare(OPS)):
            self.assertTrue(re.search(evidence.API_FILES, name), name)
        for name in ("x_notifier_chain_cond_register", "notifier_block",
                     "register_reboot_notifier", "notifier_call_chainx"):
            self.assertEqual(bool(re.search(evidence.API_FILES, name)),
                             name.startswith("x_"), name)

    def test_prefilter(self):
        converted = [*chain_api.typed(),
                     *(f"{k.upper()}_{m}" for k in CONVERTED
                       for m in ("NOTIFIER_HEAD", "NOTIFIER_INIT",
                                 "INIT_NOTIFIER_HEAD")),
                     "struct notifier_head", "nb->notifier_call(nb, 0, v)"]
        for text in converted:
            self.assertTrue(re.search(convert.PREFILTER, text), text)
        for text in [*chain_api.typed(("raw", "srcu")),
                     "RAW_NOTIFIER_HEAD", "SRCU_NOTIFIER_HEAD",
                     "struct raw_notifier_head", ".notifier_call = f"]:
            self.assertFalse(re.search(convert.PREFILTER, text), text)

    def test_renames(self):
        for name in chain_api.typed():
            op = name.split("_notifier_", 1)[1]
            self.assertEqual(chain_api.renames()[op], "notifier_" + op)
            new = name
            for pattern, repl in convert.RENAMES:
                new = pattern.sub(repl, new)
            self.assertEqual(new, "notifier_" + op)

    def test_rule_check_prefilters(self):
        # Prefixes: a file naming any of them is parsed.
        locked = ("atomic", "blocking", "srcu")     # not raw chains
        for pattern, prefixes in (
                (rulechecks.REGISTER,
                 [f"{k}_notifier_chain_register" for k in KINDS]
                 + ["notifier_chain_register"]),
                (rulechecks.CHECKS[0].grep[0][0],
                 [f"{k}_notifier_{op}" for k in locked for op in BARE_OPS]
                 + [f"notifier_{op}" for op in BARE_OPS])):
            self.assertEqual({n for n in names() if re.search(pattern, n)},
                             {n for n in names()
                              if n.startswith(tuple(prefixes))}, pattern)

    def test_text_head(self):
        for k in KINDS:
            m = evidence.TEXT_HEAD.match(f"static {k.upper()}_NOTIFIER_HEAD"
                                         "(x);")
            self.assertEqual(m.groups(), (k.upper(), "x", None, None))
            m = evidence.TEXT_HEAD.match(f"struct {k}_notifier_head y[2];")
            self.assertEqual(m.groups(), (None, None, k, "y"))
        self.assertFalse(evidence.TEXT_HEAD.match(
            f"struct {UNKNOWN_KIND}_notifier_head x;"))

    def test_the_semantic_patch_is_given_the_renames(self):
        given = {}

        def spatch(directory, path, env, scratch):
            with open(env["NOTIFIER_CLASSES"], encoding="utf-8") as f:
                given.update(json.load(f))
            return None, [], []

        with tempfile.TemporaryDirectory() as folder, \
                mock.patch.object(convert, "_spatch", spatch):
            convert.run_spatch(folder, ["a.c"], {"symbols": {}}, 1)
        self.assertEqual(given["renamed"], chain_api.renames())
        self.assertEqual(given["symbols"], {})


if __name__ == "__main__":
    unittest.main()
