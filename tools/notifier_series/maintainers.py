"""The MAINTAINERS section that owns a file, as scripts/get_maintainer.pl
finds them, with a reasoned choice where it finds several equally deep.

get_maintainer.pl ranks a file's sections by the depth of the F: pattern
that matched (N: patterns count 0) and lists equal depths in Perl's hash
order.  Counting a section's depth by its deepest pattern that matches
(get_maintainer.pl counts the last one), the owner among the deepest
sections here is:
  1. the section whose matching pattern is the longest before its first
     wildcard (include/linux/pm.h beats include/linux/pm_*);
  2. then the section that claims the fewest files of the tree, the
     narrowest owner (POWER MANAGEMENT CORE, not SUSPEND TO RAM, for
     drivers/base/power/qos.c);
  3. then the first in MAINTAINERS.
"""

import os
import re
import subprocess

from . import memo, tree
from .progress import Error

GET_MAINTAINER = ["perl", "scripts/get_maintainer.pl", "--no-git",
                  "--no-git-fallback", "--no-tree"]
# A fixed hash seed keeps get_maintainer.pl's own order (and so the To:
# and Cc: lines) the same from run to run.
PERL_ENV = dict(os.environ, PERL_HASH_SEED="0", PERL_PERTURB_KEYS="0")
REST = "THE REST"


def state(tree_path):
    """What get_maintainer.pl's answers and the owner chosen here depend
    on besides the file or patch asked about: the tree's scripts and
    MAINTAINERS (tree.scripts_state()), the list of its files (patterns
    that are folders, the narrowest owner), perl's version and this
    module."""
    files = subprocess.run(["git", "ls-files"], cwd=tree_path,
                           capture_output=True, check=True).stdout
    perl = subprocess.run(["perl", "-e", "print $^V"],
                          capture_output=True).stdout
    with open(__file__, "rb") as f:
        return memo.key(tree.scripts_state(tree_path), files, perl,
                        f.read(), *GET_MAINTAINER)


def get_maintainer(tree_path, args):
    """Runs scripts/get_maintainer.pl with `args`; the CompletedProcess."""
    return subprocess.run(GET_MAINTAINER + args, cwd=tree_path,
                          capture_output=True, text=True, env=PERL_ENV)


def parse_sections(text):
    """[(title, [(letter, value)])] of MAINTAINERS-formatted `text`."""
    sections = []
    for line in text.splitlines():
        m = re.match(r"([A-Z]):\s*(.*?)\s*$", line)
        if m and sections:
            sections[-1][1].append((m.group(1), m.group(2)))
        elif line.strip() and not m:
            sections.append((line.strip(), []))
    return sections


def to_regex(pattern, is_dir=lambda p: False):
    """An F:/X: pattern as get_maintainer.pl reads it: . * ? become
    regex, then a directory gets its trailing slash."""
    regex = (pattern.replace(".", r"\.").replace("*", ".*")
             .replace("?", "."))
    if not regex.endswith("/") and is_dir(regex):
        regex += "/"
    return regex


def compile_entries(entries, is_dir=lambda p: False):
    """[(letter, pattern, regex, compiled regex)] of a section's F:, X:
    and N: entries."""
    out = []
    for letter, value in entries:
        if letter in "FX":
            regex = to_regex(value, is_dir)
            out.append((letter, value, regex, re.compile(regex)))
        elif letter == "N":
            out.append((letter, value, value, re.compile(value, re.X)))
    return out


def file_matches(path, regex, compiled):
    """get_maintainer.pl's file_match_pattern()."""
    if not compiled.match(path):
        return False
    return regex.endswith("/") or path.count("/") == regex.count("/")


def literal_length(pattern):
    return len(re.split(r"[*?\[]", pattern, maxsplit=1)[0])


def depth(path, compiled):
    """The depth of the section (its compile_entries()) for `path`, counted
    as get_maintainer.pl does, and its pattern; (None, None) when the
    section does not claim the file.  Where several patterns match, the
    deepest and then longest counts (get_maintainer.pl takes the last)."""
    if any(letter == "X" and file_matches(path, regex, c)
           for letter, _, regex, c in compiled):
        return None, None
    found = []
    for letter, value, regex, c in compiled:
        if letter == "F" and file_matches(path, regex, c):
            d = regex.count("/") + (not regex.endswith("/"))
            found.append((-1 if regex.startswith(".*") else d, value))
        elif letter == "N" and c.search(path):
            found.append((0, value))
    if not found:
        return None, None
    return max(found, key=lambda f: (f[0], literal_length(f[1])))


def owner(path, sections, claimed, order, is_dir=lambda p: False):
    """The title of the section of `sections` (get_maintainer.pl --sections
    for `path`) that owns `path`: deepest, then longest literal pattern,
    then fewest files `claimed(title, entries)`, then MAINTAINERS `order`
    (title -> index)."""
    ranked = []
    for title, entries in sections:
        if title == REST:
            continue
        d, pattern = depth(path, compile_entries(entries, is_dir))
        if d is not None:
            ranked.append((d, literal_length(pattern), title, entries))
    if not ranked:
        return REST
    best = max(r[:2] for r in ranked)
    ranked = [r for r in ranked if r[:2] == best]
    if len(ranked) == 1:
        return ranked[0][2]
    return min(ranked, key=lambda r: (claimed(r[2], r[3]),
                                      order.get(r[2], len(order))))[2]


class Maintainers:
    """The owners of files of one kernel tree."""

    def __init__(self, tree_path):
        self.tree = tree_path
        with open(os.path.join(tree_path, "MAINTAINERS"),
                  encoding="utf-8", errors="replace") as f:
            titles = [t for t, _ in parse_sections(
                f.read().split("\nMaintainers List", 1)[-1])]
        self.order = {t: i for i, t in enumerate(titles)}
        self._files = None
        self._claimed = {}

    def is_dir(self, pattern):
        return os.path.isdir(os.path.join(self.tree, pattern))

    def files(self):
        if self._files is None:
            self._files = subprocess.run(
                ["git", "ls-files"], cwd=self.tree, capture_output=True,
                text=True, check=True).stdout.split()
        return self._files

    def claimed(self, title, entries):
        """How many files of the tree the section claims."""
        if title not in self._claimed:
            compiled = compile_entries(entries, self.is_dir)
            self._claimed[title] = sum(depth(f, compiled)[0] is not None
                                       for f in self.files())
        return self._claimed[title]

    def sections(self, path):
        proc = get_maintainer(self.tree, ["--sections", "-f", path])
        if proc.returncode != 0:
            raise Error(f"scripts/get_maintainer.pl failed on {path}: "
                        f"{proc.stderr.strip()}")
        return parse_sections(proc.stdout)

    def owner(self, path):
        return owner(path, self.sections(path), self.claimed, self.order,
                     self.is_dir)
