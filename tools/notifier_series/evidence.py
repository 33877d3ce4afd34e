"""Running cocci/notifier_evidence.cocci over a tree and reading its
records: a first pass over the files that use the chain API, a second one
over the files that call the chains' own wrappers found by the first."""

import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import time

from . import chain_api, output, tree
from .progress import Error, say
from .records import Evidence
from .tree import REPO

SMPL = os.path.join(REPO, "cocci", "notifier_evidence.cocci")

# Files worth parsing in the first pass: heads and uses of the chain API.
# Any kind's operation by its infix, not its name: a file that uses an
# operation chain_api does not know yet is read too.
API_FILES = (r"_notifier_head\b|NOTIFIER_HEAD|_notifier_chain_|"
             r"_notifier_call_chain|"
             rf"\bnotifier_({chain_api.alternation(chain_api.BARE_OPS)})\b")
# A function called from more files than this is not followed.
MAX_CALLER_FILES = 150
CHUNK = 16
TIMEOUT = 120          # seconds spatch may spend on one file


def grep_files(tree_path, pattern, words=False):
    """Tracked .c and .h files of the tree matching the regex (git grep
    -P: Perl's, the same as the extended one for these patterns and
    several times faster on a kernel tree)."""
    if words:           # not -w: git 2.39's -w with -P misses matches
        pattern = rf"\b(?:{pattern})\b"
    cmd = ["git", "-C", tree_path, "grep", "-l", "-P"]
    proc = subprocess.run(cmd + ["-e", pattern, "--", "*.c", "*.h"],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise Error(f"git grep failed in {tree_path}: {proc.stderr.strip()}")
    return sorted(proc.stdout.split())


def grep_callers(tree_path, names):
    """{name: files of the tree where the word occurs}, in one git grep."""
    found = {name: set() for name in names}
    names = sorted(names)
    for i in range(0, len(names), 200):
        # -P: glibc's regex takes longer on an alternation; \b, not -w,
        # which git 2.39 gets wrong with -P (it misses most matches).
        pattern = (r"\b(?:" + "|".join(re.escape(n) for n in
                                       names[i:i + 200]) + r")\b")
        proc = subprocess.run(["git", "-C", tree_path, "grep", "-o", "-P",
                               "-e", pattern, "--", "*.c", "*.h"],
                              capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            raise Error(f"git grep failed in {tree_path}: "
                        f"{proc.stderr.strip()}")
        for line in proc.stdout.splitlines():
            path, _, word = line.rpartition(":")
            if word in found:
                found[word].add(path)
    return found


# Top-level head definitions, found by text as well: spatch skips a part
# of a file it cannot parse, and with it the heads defined there.
_KINDS = chain_api.alternation(chain_api.KINDS)
TEXT_HEAD = re.compile(
    rf"^(?:static\s+)?(?:({_KINDS.upper()})_NOTIFIER_HEAD(?:_STATIC)?"
    rf"\(\s*(\w+)\s*\)|struct\s+({_KINDS})_notifier_head\s+"
    r"(\w+)\s*(?:\[[^]]*\])?\s*[;=])")


def text_heads(tree_path, files):
    """Head records of the definitions that start a line."""
    records = []
    for path in files:
        if not path.endswith(".c"):
            continue
        with open(os.path.join(tree_path, path), encoding="utf-8",
                  errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = TEXT_HEAD.match(line)
                if not m:
                    continue
                if m.group(1):
                    records.append({"kind": "head", "form": "macro",
                                    "symbol": m.group(2), "file": path,
                                    "line": number, "fn": "something_else"})
                else:
                    records.append({"kind": "head", "form": "variable",
                                    "symbol": m.group(4), "file": path,
                                    "line": number, "fn": m.group(4),
                                    "declared": m.group(3)})
    return records


def include_flags(path):
    arch = path.split("/")[1] if path.startswith("arch/") else "x86"
    flags = ["--include-headers-for-types", "--all-includes"]
    for d in ("include", "include/uapi", f"arch/{arch}/include",
              f"arch/{arch}/include/uapi"):
        flags += ["-I", d]
    return flags


# spatch's lines on what it parsed (--quiet --parse-error-msg): not
# problems of the run, although they may quote code that says "error".
DIAGNOSTIC = re.compile(r"bad:|BAD:|badcount:|HANDLING:|init_defs_builtins:"
                        r"|parse error|semantic error|ERROR-RECOV"
                        r"| ?= ?error in |Note: processing took ")


def unparsed(text):
    """The files of spatch's messages (--parse-error-msg) with code spatch
    could not parse or type ("parse error", "semantic error"): what it
    found there is missing those parts."""
    return sorted({f for f in re.findall(r"^ ?= ?error in (\S+?); ", text,
                                         re.M)
                   if not os.path.isabs(f)})      # spatch's own macros


def _spatch(tree_path, files, env, flags=()):
    """(records, problems, files parsed only in part) of one run."""
    cmd = ["spatch", "--quiet", "--parse-error-msg", "--sp-file", SMPL,
           "-D", "evidence", "--timeout", str(TIMEOUT),
           "--no-show-diff"] + list(flags) + files
    proc = subprocess.run(cmd, cwd=tree_path, env=env, capture_output=True,
                          text=True, errors="replace")
    records = [json.loads(line[5:]) for line in proc.stdout.splitlines()
               if line.startswith("NSEV ")]
    problems = [line for line in proc.stderr.splitlines()
                if re.search(r"timeout|error|EXN", line, re.I)
                and not DIAGNOSTIC.match(line)]
    if proc.returncode != 0:
        problems.append(f"spatch exited {proc.returncode} on "
                        + ", ".join(files))     # each is a failed file
    return records, problems, unparsed(proc.stderr)


class Cache:
    """spatch's records per chunk of files, in a folder of the work folder,
    keyed by everything they depend on: the semantic patch, this module,
    spatch's version, the wrappers followed, the flags, the chunk's files
    and the .c files they include, and every other file of the tree (headers
    above all), so that no answer is reused once any input changed.  A
    checkout with local changes (modified, untracked or ignored files) is
    not cached at all.  Only clean runs are stored: a chunk on which
    spatch reported a problem is run again next time.  Deleting the
    folder only costs time."""

    def __init__(self, folder, tree_path, env):
        self.folder = folder
        self.tree_path = tree_path
        self.blobs = None
        if not tree.clean(tree_path):
            return
        self.blobs = tree.blobs(tree_path)
        context = hashlib.sha256()
        for path in sorted(self.blobs):
            if not path.endswith(".c"):
                context.update(f"{path} {self.blobs[path]}\n".encode())
        self.base = (f"{tree.sha256(SMPL)} {tree.sha256(__file__)} "
                     f"{spatch_version(env)} {context.hexdigest()}")

    def key(self, files, env, flags):
        if self.blobs is None:
            return None
        h = hashlib.sha256(self.base.encode())
        h.update(f"{env.get('NOTIFIER_WRAPPERS')} {' '.join(flags)}\n"
                 .encode())
        for path in files:
            h.update(f"{path} {self.blobs.get(path)}\n".encode())
            for inc in self._included_c(path, set()):
                h.update(f"+{inc} {self.blobs.get(inc)}\n".encode())
        return h.hexdigest()

    def _included_c(self, path, seen):
        """The .c files `path` includes, and those they include."""
        try:
            with open(os.path.join(self.tree_path, path), encoding="utf-8",
                      errors="replace") as f:
                text = f.read()
        except OSError:
            return []
        here = os.path.dirname(path)
        found = []
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+\.c)"', text,
                               re.M):
            inc = os.path.normpath(os.path.join(here, name))
            if inc not in seen:
                seen.add(inc)
                found += [inc] + self._included_c(inc, seen)
        return sorted(found)

    def get(self, key):
        if key is None:
            return None
        try:
            with open(os.path.join(self.folder, key + ".json"),
                      encoding="utf-8") as f:
                hit = json.load(f)
        except (OSError, ValueError):
            return None
        ok = isinstance(hit, dict) and \
            {"records", "problems", "unparsed"} <= set(hit)
        return hit if ok else None

    def put(self, key, value):
        if key is None:
            return
        os.makedirs(self.folder, exist_ok=True)
        output.write_json(os.path.join(self.folder, key + ".json"), value,
                          indent=None, sync=False)


def spatch_env(wrappers=()):
    """The environment spatch runs in: Debian's spatch first on the PATH,
    and the wrappers the second pass follows."""
    return dict(os.environ, NOTIFIER_WRAPPERS=",".join(sorted(wrappers)),
                PATH="/usr/bin:" + os.environ.get("PATH", ""))


def spatch_version(env):
    try:
        proc = subprocess.run(["spatch", "--version"], env=env,
                              capture_output=True, text=True)
    except FileNotFoundError:
        raise Error("spatch is not installed: install coccinelle "
                    "(make deps)")
    return proc.stdout.strip()


def run(tree_path, files, jobs, label, wrappers=(), includes=False,
        cache=None):
    """Runs the evidence SmPL on `files`, `jobs` spatch processes at once
    (spatch's own --jobs does not split an explicit file list); prints
    progress.  Chunks whose records `cache` holds are not run again.
    Returns (records, problems, files spatch parsed only in part)."""
    env = spatch_env(wrappers)
    size = 1 if includes else CHUNK
    chunks = [files[i:i + size] for i in range(0, len(files), size)]
    records, problems, partly, done, reused = [], [], set(), 0, 0
    start = shown = time.monotonic()

    def one(chunk):
        flags = include_flags(chunk[0]) if includes else ()
        key = cache.key(chunk, env, flags) if cache else None
        hit = cache.get(key) if cache else None
        if hit is not None:
            return hit["records"], hit["problems"], hit["unparsed"], True
        got, bad, part = _spatch(tree_path, chunk, env, flags)
        if cache and not bad:
            cache.put(key, {"records": got, "problems": bad,
                            "unparsed": part})
        return got, bad, part, False

    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(one, c): c for c in chunks}
        for future in concurrent.futures.as_completed(futures):
            got, bad, part, hit = future.result()
            records += got
            problems += bad
            partly.update(part)
            done += len(futures[future])
            reused += len(futures[future]) if hit else 0
            if time.monotonic() - shown >= 30 or done == len(files):
                shown = time.monotonic()
                say(f"    {label}: {done}/{len(files)} files ({reused} "
                    f"from the cache), {shown - start:.0f}s")
    return records, problems, sorted(partly)


def dedupe(records):
    seen, out = set(), []
    for r in records:
        key = json.dumps(r, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def collect(tree_path, jobs, followed, cache_folder=None):
    """The Evidence of a tree.  `followed(records)` names the functions
    whose callers the second pass must look at: the chains' wrappers.
    With `cache_folder`, spatch's records are kept there (see Cache)."""
    cache = Cache(cache_folder, tree_path, spatch_env()) \
        if cache_folder else None
    first = grep_files(tree_path, API_FILES)
    records, problems, partly = run(tree_path, first, jobs,
                                    "chain API users", cache=cache)
    records += text_heads(tree_path, first)
    # Member chains whose structure spatch did not see: again, with the
    # headers that define the types.
    typed = {(r["file"], r["line"]) for r in records
             if r["kind"] == "site_type"}
    untyped = sorted({r["file"] for r in records if r["kind"] == "site"
                      and re.search(r"(->|\.) \w+( \[ .* \])?$", r["chain"])
                      and (r["file"], r["line"]) not in typed})
    if untyped:
        more, bad, _ = run(tree_path, untyped, jobs, "member chains, with "
                           "headers", includes=True, cache=cache)
        records += [r for r in more if r["kind"] == "site_type"]
        problems += bad
    wrappers = set(followed(records))
    callers = grep_callers(tree_path, wrappers)
    skipped = {name: len(where) for name, where in callers.items()
               if len(where) > MAX_CALLER_FILES}
    wrappers -= set(skipped)
    files = set().union(*(callers[name] for name in wrappers)) \
        if wrappers else set()
    if wrappers:
        more, bad, part = run(tree_path, sorted(files), jobs,
                              f"callers of {len(wrappers)} wrappers",
                              wrappers, cache=cache)
        records += more
        problems += bad
        partly += part
    return Evidence(records=dedupe(records), problems=problems,
                    unparsed=sorted(set(partly)),
                    files={"api": len(first), "callers": len(files)},
                    wrappers=sorted(wrappers), not_followed=skipped)
