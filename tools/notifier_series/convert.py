"""Converting a directory of C sources onto struct notifier_head with
cocci/notifier_convert.cocci, driven by a classification file.

Nothing is written until every file has been converted and the sources
fit the classification: then either a patch is written, or with
in_place the files are replaced, each atomically."""

import concurrent.futures
import difflib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from . import chain_api, classification, evidence, memo, output, tree
from .progress import Error, say
from .records import ConvertReport
from .tree import REPO

SMPL = os.path.join(REPO, "cocci", "notifier_convert.cocci")
# Its -D patch adds the unregister wrapper that a register wrapper lacks.
UNREGISTER_SMPL = os.path.join(REPO, "cocci",
                               "notifier_register_without_unregister.cocci")
MACROS = os.path.join(REPO, "cocci", "notifier_macros.h")
# The typed API that the conversion replaces.
_CONVERTED = chain_api.alternation(chain_api.CONVERTED)
# The kinds that the series leaves as they are.
_LEFT_KINDS = chain_api.alternation(chain_api.LEFT)
_LEFT = "|".join(k + "_" for k in chain_api.LEFT)
TYPED = re.compile(
    rf"\b(({_CONVERTED})_notifier_("
    rf"{chain_api.alternation([*chain_api.OPS, 'head'])})|"
    rf"({_CONVERTED.upper()})_NOTIFIER_INIT)\b")
# How a line of a comment starts, once stripped.
COMMENT = ("*", "/*", "//")
# Where the typed API is defined, as a compatibility layer.
COMPAT = ("include/linux/notifier.h",)
TIMEOUT = 300          # seconds spatch may spend on one file


def class_table(entries):
    """The NOTIFIER_CLASSES data of cocci/notifier_convert.cocci."""
    table = {"symbols": {}, "public": {}, "members": {}, "member_names": {},
             "bare": {}, "bare_public": {}}
    public = {}
    for e in entries:
        chain, cls = e["chain"], e["class"]
        if e["declared"] in ("raw", "srcu"):
            continue
        if chain.startswith("struct "):
            table["members"][chain] = cls
            member = chain.rsplit(".", 1)[1]
            table["member_names"].setdefault(member, []).append(cls)
            continue
        kind = "bare" if e["declared"] == "bare" else "symbols"
        table[kind][f"{e['defined']}:{chain}"] = cls
        public.setdefault((kind, chain), set()).add(cls)
    for (kind, chain), classes in public.items():
        if len(classes) == 1:
            table["bare_public" if kind == "bare" else "public"][chain] = \
                classes.pop()
    return table


PREFILTER = (rf"({_CONVERTED})_notifier_|\bnotifier_head\b|"
             rf"({_CONVERTED.upper()})_NOTIFIER_|"
             rf"({_CONVERTED.upper()})_INIT_NOTIFIER_HEAD|"
             r"->notifier_call\b")


def candidates(directory, bare_symbols):
    """The .c and .h files of `directory` that the semantic patch can
    change or report on, and the assembly files that may call the typed
    API, relative to it."""
    pattern = PREFILTER
    if bare_symbols:
        pattern += "|\\b(" + "|".join(sorted(bare_symbols)) + ")\\b"
    return grep(directory, pattern)


def _grep(directory, pattern, output):
    """git grep (grep outside a git tree) of the extended regular
    expression `pattern` in the .c, .h and .S files of `directory`, with
    `output`, "-l" or "-ho"; its lines.  git grep reads it as a Perl
    regular expression, the same for the patterns here (\\b, alternation,
    classes) and several times faster than glibc's on a kernel tree."""
    if os.path.isdir(os.path.join(directory, ".git")):
        cmd = ["git", "-C", directory, "grep", output, "-P", "-e", pattern,
               "--", "*.c", "*.h", "*.S"]
    else:
        cmd = ["grep", "-r", output, "-E", "--include=*.c", "--include=*.h",
               "--include=*.S", "-e", pattern, "."]
    proc = subprocess.run(cmd, cwd=directory, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise Error(f"searching {directory} failed: {proc.stderr.strip()}")
    return proc.stdout.split()


def grep(directory, pattern):
    """The .c, .h and .S files of `directory` where the extended regular
    expression `pattern` matches, relative to it."""
    return sorted(os.path.normpath(p) for p in _grep(directory, pattern,
                                                     "-l"))


def occurring(directory, names):
    """The identifiers of `names` that the .c, .h and .S files of
    `directory` name, in one search."""
    if not names:
        return set()
    return set(_grep(directory, r"\b(" + "|".join(sorted(names)) + r")\b",
                     "-ho"))


# A call of the 2005 API on a bare head: the names the new API keeps.
_BARE = chain_api.alternation(chain_api.BARE_OPS)
BARE_CALL = re.compile(rf"\b(notifier_(?:{_BARE}))\s*\(\s*&\s*(\w+)\s*,")


# A declaration at file scope of struct notifier_block, and its
# declarators; in them, a pointer of that type.
POINTERS = re.compile(r"^(?:(?:static|extern)\s+)?struct\s+notifier_block\b"
                      r"([^;(){}]*)", re.M)
NAME = re.compile(r"\*\s*(\w+)\b(?!\s*\()")


def api_texts(directory):
    """{path: text} of the files of `directory` that name a register,
    unregister or call of the chain API (typed, raw, SRCU or not)."""
    return {f: _text(directory, f) for f in grep(
        directory, f"notifier_({_BARE})")}


def unlisted_bare(directory, bare, path, api=None):
    """Errors, file:line, where the 2005 API is called on a bare head
    (a `struct notifier_block *` of the directory) that the
    classification does not name: left as it is, the call would not
    compile against the new API of the same name.  `api`: api_texts() of
    the directory, when already read."""
    calls = []
    for f, text in (api_texts(directory) if api is None else api).items():
        calls += [(m.group(2), f, text.count("\n", 0, m.start()) + 1,
                   m.group(1)) for m in BARE_CALL.finditer(text)]
    names = {c[0] for c in calls} - bare
    pointers = set()
    if names:
        for f in grep(directory, r"^((static|extern)\s+)?struct\s+"
                      r"notifier_block\b[^;(){}]*\*"):
            text = _text(directory, f)
            for m in POINTERS.finditer(text):
                # The declarators, and the character after them: a name
                # followed by "(" is a function's.
                pointers.update(NAME.findall(text, m.start(1), m.end(1) + 1))
    pointers &= names
    return [f"{f}:{line}: {api}(&{name}, ...) calls the 2005 API on the "
            f"bare head {name}, which is not in {path}"
            for name, f, line, api in sorted(calls) if name in pointers]


# An exported register wrapper of a converted chain that is only a call,
# as the -D patch of UNREGISTER_SMPL completes: (wrapper, head).  No
# attribute (__init) and no raw or SRCU chain, which the series leaves.
REGISTER_WRAPPER = re.compile(
    r"^int[ \t]+(\w+)\s*\(\s*struct\s+notifier_block\s*\*\s*(\w+)\s*\)\s*"
    r"\{\s*return\s+"
    rf"(?!{_LEFT})"
    r"\w*notifier_chain_register\w*\s*\(\s*&\s*"
    r"(\w+)\s*,\s*\2\s*\)\s*;\s*\}\s*EXPORT_SYMBOL(?:_GPL)?\s*\(\s*\1\s*\)"
    r"\s*;", re.M)
# An unregistration, on one line or more: (head).
UNREGISTER = re.compile(r"notifier_chain_unregister\s*\(\s*&\s*(\w+)\b")


def unregister_name(register):
    """The name of the unregister wrapper of `register`, as the semantic
    patch makes it, or None."""
    name = re.sub(r"(^|_)register(?=_|$)", r"\1unregister", register,
                  count=1)
    return None if name == register else name


def add_unregister(directory, paths, texts, jobs, api=None):
    """2005's 4/7: the unregister wrapper beside each exported register
    wrapper of `paths` (REGISTER_WRAPPER) whose chain nothing in the
    directory unregisters from and whose unregister name is free, and its
    declaration after the register wrapper's in the headers.  `texts`
    ({path: text}, the conversion's) is updated; returns (added, errors):
    [{"file", "line", "wrapper", "register", "chain", "headers"}] and the
    headers that declare a register wrapper in a form this does not
    complete.  `api`: api_texts() of the directory, when already read."""
    found = [(path, m.group(1), m.group(3)) for path in paths
             for m in REGISTER_WRAPPER.finditer(
                 texts.get(path) or _text(directory, path))]
    unregistered = set()
    if found:
        unregistered = {m.group(1) for text in (
            api_texts(directory) if api is None else api).values()
            for m in UNREGISTER.finditer(text)}
    taken = occurring(directory, {unregister_name(f) for _, f, _ in found
                                  if unregister_name(f)})
    complete = [(path, f, unregister_name(f), head)
                for path, f, head in found if head not in unregistered and
                unregister_name(f) and unregister_name(f) not in taken]
    env = dict(os.environ, NOTIFIER_COMPLETE=" ".join(
        sorted({f for _, f, _, _ in complete})))
    with tempfile.TemporaryDirectory(prefix="notifier-unregister-") as tmp:
        def patch(path):
            copy = os.path.join(tmp, path.replace("/", "__"))
            with open(copy, "w", encoding="utf-8",
                      errors="surrogateescape") as f:
                f.write(texts.get(path) or _text(directory, path))
            proc = subprocess.run(
                ["spatch", "--very-quiet", "-D", "patch", "--no-includes",
                 "--include-headers", "--sp-file", UNREGISTER_SMPL,
                 "--in-place", copy], capture_output=True, text=True,
                env=env)
            if proc.returncode:
                raise Error(f"{path}: spatch -D patch of "
                            f"{os.path.basename(UNREGISTER_SMPL)} failed: "
                            f"{proc.stderr.strip()}")
            return path, _text(tmp, os.path.basename(copy))

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            texts.update(pool.map(patch, sorted({c[0] for c in complete})))
    added, errors = [], []
    for path, register, wrapper, head in complete:
        at = re.search(rf"^int {wrapper}\(", texts[path], re.M)
        if not at:
            errors.append(f"{path}: {wrapper}() was not added beside "
                          f"{register}()")
            continue
        headers, problems = declarations(directory, texts, register, wrapper)
        errors += problems
        added.append({"file": path,
                      "line": texts[path].count("\n", 0, at.start()) + 1,
                      "wrapper": wrapper, "register": register,
                      "chain": head, "headers": headers})
    return added, errors


def declarations(directory, texts, register, wrapper):
    """Declares `wrapper` after each declaration of `register` in the
    directory's headers: a prototype, on one line or more, and a static
    inline stub (the #else branch of a configuration).  Returns the
    headers changed, and file:line problems where `register` is declared
    in a form this does not copy."""
    params = r"\(\s*struct\s+notifier_block\s*\*\s*\w*\s*\)"
    forms = (re.compile(rf"^[ \t]*(?:extern[ \t]+)?int[ \t]+{register}\s*"
                        rf"{params}\s*;[ \t]*$", re.M),
             re.compile(rf"^[ \t]*static[ \t]+inline[ \t]+int[ \t]+"
                        rf"{register}\s*{params}\s*\{{[^{{}}]*\}}[ \t]*$",
                        re.M))
    declared = re.compile(rf"\bint\b[^;(){{}}=]*\b{register}\s*\(")
    headers, problems = [], []
    for path in grep(directory, rf"\b{register}\b"):
        if not path.endswith(".h"):
            continue
        text = texts.get(path) or _text(directory, path)
        copied = [m for form in forms for m in form.finditer(text)]
        for m in declared.finditer(text):
            if not any(c.start() <= m.start() < c.end() for c in copied):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{path}:{line}: {register}() is declared "
                                f"here in a form that the conversion does "
                                f"not copy: declare {wrapper}() by hand")
        for m in sorted(copied, key=lambda m: m.start(), reverse=True):
            gap = "\n\n" if "\n" in m.group().strip() and "{" in m.group() \
                else "\n"
            text = (text[:m.end()] + gap
                    + m.group().lstrip("\n").replace(register, wrapper)
                    + text[m.end():])
        if copied:
            texts[path] = text
            headers.append(path)
    return headers, problems


def _text(directory, path):
    with open(os.path.join(directory, path), encoding="utf-8",
              errors="surrogateescape") as f:
        return f.read()


# How the conversion runs spatch on a file, and what of its messages is
# a problem; both are part of the key of a kept result.
SPATCH = ("spatch", "--very-quiet", "-D", "patch", "--no-includes",
          "--macro-file", MACROS, "--timeout", str(TIMEOUT), "--sp-file",
          SMPL)
PROBLEM = re.compile(r"timeout|error|EXN|exception", re.I)
# Where spatch reads options of its own: the folder it runs in, and home.
COCCICONFIG = ".cocciconfig"


def spatch_env(table_file=None):
    """The environment spatch runs in: Debian's spatch and python3 first,
    the class table in NOTIFIER_CLASSES."""
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    if table_file:
        env["NOTIFIER_CLASSES"] = table_file
    return env


def _spatch(directory, path, env, scratch):
    """(new text or None, records, problems) of one file."""
    out = os.path.join(scratch, path.replace("/", "__"))
    cmd = list(SPATCH) + ["-o", out, path]
    proc = subprocess.run(cmd, cwd=directory, capture_output=True,
                          text=True, errors="replace",
                          env=dict(env, NOTIFIER_FILE=path))
    records = [json.loads(line[5:]) for line in proc.stdout.splitlines()
               if line.startswith("NSCV ")]
    problems = [f"{path}: {line.strip()}"
                for line in proc.stderr.splitlines() if PROBLEM.search(line)]
    if proc.returncode != 0:
        problems.append(f"{path}: spatch exited {proc.returncode}")
    text = None
    if os.path.exists(out):
        with open(out, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        os.unlink(out)
    return text, records, problems


def _chain_name(section, key):
    """The identifier by which the semantic patch looks up the entry `key`
    of the class table's `section` in a file."""
    if section in ("symbols", "bare"):
        return key.rpartition(":")[2]
    if section == "members":
        return key.rpartition(".")[2]
    return key


def spatch_key(directory, path, table, fixed):
    """What spatch's result on `path` depends on: the file's path and
    text, `fixed` (the semantic patch, the macro file, spatch's version)
    and the entries of the class table that the semantic patch can look
    up in this file: those named by one of its identifiers or by the
    macro file."""
    with open(os.path.join(directory, path), "rb") as f:
        text = f.read()
    words = set(re.findall(rb"\w+", text)) | fixed[1]
    relevant = {section: {k: v for k, v in entries.items()
                          if _chain_name(section, k).encode() in words}
                for section, entries in table.items()}
    return memo.key(fixed[0], path, text,
                    json.dumps(relevant, sort_keys=True))


def _fixed(directory, env):
    """(digest, identifiers of the macro file) of what every file's
    result depends on: the semantic patch, the macro file, spatch's
    command line, version and .cocciconfig files, what counts as a
    problem, and the new names of the typed API."""
    with open(SMPL, "rb") as f, open(MACROS, "rb") as g:
        smpl, macros = f.read(), g.read()
    version = evidence.spatch_version(env)
    configs = b""
    for folder in (directory, os.path.expanduser("~")):
        try:
            with open(os.path.join(folder, COCCICONFIG), "rb") as f:
                configs += folder.encode() + b":" + f.read()
        except OSError:
            pass
    return (memo.key(*SPATCH, smpl, macros, version, configs,
                     PROBLEM.pattern,
                     json.dumps(chain_api.renames(), sort_keys=True)),
            set(re.findall(rb"\w+", macros)))


def run_spatch(directory, files, table, jobs, cache=None):
    """{path: new text} of the files spatch changed, records, problems.
    With a `cache` folder, a file whose spatch_key() it holds is not
    given to spatch again; a result with problems is not kept."""
    fixed = _fixed(directory, spatch_env()) if cache else None
    keys = {p: spatch_key(directory, p, table, fixed) for p in files} \
        if cache else {}
    hits = {p: memo.get(cache, k) for p, k in keys.items()}
    hits = {p: got for p, got in hits.items() if got is not None}
    if cache:
        say(f"    spatch: {len(hits)} of {len(files)} files from the cache "
            f"in {cache}")
    files = [p for p in files if p not in hits]
    changed, records, problems = {}, [], []
    for path, (text, recs) in sorted(hits.items()):
        records += recs
        if text is not None and text != _text(directory, path):
            changed[path] = text
    if not files:
        return changed, records, problems
    scratch = tempfile.mkdtemp(prefix="notifier-convert-")
    try:
        classes = os.path.join(scratch, "classes.json")
        with open(classes, "w", encoding="utf-8") as f:
            json.dump(dict(table, renamed=chain_api.renames()), f)
        env = spatch_env(classes)
        start = shown = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futures = {pool.submit(_spatch, directory, path, env, scratch):
                       path for path in files}
            for done, future in enumerate(
                    concurrent.futures.as_completed(futures), 1):
                path = futures[future]
                text, recs, probs = future.result()
                records += recs
                problems += probs
                if cache and not probs:
                    memo.put(cache, keys[path], [text, recs])
                if text is not None and text != _text(directory, path):
                    changed[path] = text
                now = time.monotonic()
                if now - shown >= 15 or done == len(files):
                    shown = now
                    say(f"    spatch: {done}/{len(files)} files, "
                        f"{len(changed)} changed, {now - start:.0f}s")
        return changed, records, problems
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


TEXT_HEAD = re.compile(rf"^((?:static\s+)?)({_CONVERTED.upper()})"
                       r"_NOTIFIER_HEAD\((\w+)\);")
RENAMES = [
    (re.compile(rf"\b(?:{_CONVERTED})_notifier_("
                rf"{chain_api.alternation(chain_api.OPS)})\b"),
     r"notifier_\1"),
    (re.compile(rf"\b(?:{_CONVERTED})_notifier_head\b"), "notifier_head"),
    (re.compile(rf"\b({_CONVERTED.upper()})_NOTIFIER_INIT\b"),
     r"\1_NOTIFIER_HEAD_INIT"),
]


def by_text(path, text, table, records, keep):
    """What spatch could not parse, converted line by line: macro heads it
    did not see get the macro of their class, and the typed API's names
    left on lines that are not `keep` become the new ones, as the
    compatibility layer's macros would make them; comments too, so that
    they name functions that exist.  Returns the new text, head records,
    the code lines changed and the comment lines changed."""
    seen = {r["what"] for r in records
            if r["file"] == path and r.get("form") in ("macro", "bare")}
    lines = text.splitlines(keepends=True)
    heads, changed, comments = [], [], []
    for number, line in enumerate(lines, 1):
        new = line
        m = TEXT_HEAD.match(line)
        if m and m.group(3) not in seen:
            symbol, declared = m.group(3), m.group(2).lower()
            cls = (table["symbols"].get(f"{path}:{symbol}") or
                   table["public"].get(symbol) or
                   table["bare"].get(f"{path}:{symbol}") or
                   table["bare_public"].get(symbol))
            heads.append({"kind": "head" if cls else "unknown",
                          "form": "macro", "what": symbol, "file": path,
                          "line": number, "declared": declared, "cls": cls})
            if cls in ("atomic", "blocking") and cls != declared:
                new = TEXT_HEAD.sub(rf"\1{cls.upper()}_NOTIFIER_HEAD(\3);",
                                    line)
        if number not in keep:
            for pattern, repl in RENAMES:
                new = pattern.sub(repl, new)
        if new != line:
            lines[number - 1] = new
            if line.strip().startswith(COMMENT):
                comments.append(number)
            else:
                changed.append(number)
    return "".join(lines), heads, changed, comments


def retab(old, new):
    """`new` with the leading spaces of the lines it changes from `old`
    made tabs where eight of them follow the tabs, as kernel style wants:
    spatch aligns a continuation line with spaces when it cannot reuse the
    original's indentation."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines,
                                      autojunk=False)
    for op, _, _, j1, j2 in matcher.get_opcodes():
        if op not in ("replace", "insert"):
            continue
        for j in range(j1, j2):
            m = re.match(r"^(\t*)( {8,})(?=\S)", new_lines[j])
            if m:
                spaces = len(m.group(2))
                new_lines[j] = (m.group(1) + "\t" * (spaces // 8) +
                                " " * (spaces % 8) + new_lines[j][m.end():])
    return "".join(new_lines)


def leftovers(path, text):
    """Uses of the typed API left in a file's text: (line, name)."""
    if path in COMPAT:
        return []
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(COMMENT):
            continue
        for m in TYPED.finditer(line):
            found.append((number, m.group(1)))
    return found


DEFINITIONS = ("macro", "variable", "member", "bare")


def definitions(records, directory):
    """The head records that define a chain: not extern declarations,
    not the heads of a function's locals."""
    return [r for r in records if r["kind"] in ("head", "unknown") and
            r["form"] in DEFINITIONS and not _is_declaration(directory, r)]


def check_fit(entries, records, directory, path):
    """Errors, file:line, where the sources and the classification do not
    fit: a head the classification does not name, a chain it names in a
    file of the directory where no such head is.  A chain excluded there
    may be raw or SRCU in the sources: a fix before the series made it so
    (6.12's random_ready_notifier)."""
    defined = definitions(records, directory)
    errors = [f"{r['file']}:{r['line']}: the chain {r['what']} "
              f"({r['declared']}) is not in {path}"
              for r in defined if r["kind"] == "unknown"]
    seen = {(r["what"], r["file"]) for r in defined}
    seen_members = {r["what"] for r in defined}
    for e in entries:
        if e["declared"] in ("raw", "srcu"):
            continue
        if not os.path.exists(os.path.join(directory, e["defined"])):
            continue
        if e["chain"].startswith("struct "):
            if e["chain"] in seen_members:
                continue
        elif "." in e["chain"] or (e["chain"], e["defined"]) in seen:
            continue
        elif e["class"] == "excluded" and made_raw(directory, e):
            continue
        errors.append(f"{path}:{e.line}: the chain {e['chain']} is not "
                      f"defined in {e['defined']}")
    return errors


def made_raw(directory, entry):
    """Whether the file of `entry` defines its chain with a raw or SRCU
    head."""
    with open(os.path.join(directory, entry["defined"]), encoding="utf-8",
              errors="replace") as f:
        text = f.read()
    name = re.escape(entry["chain"])
    return bool(re.search(
        rf"\b(?:{_LEFT_KINDS.upper()})_NOTIFIER_HEAD(?:_STATIC)?"
        rf"\(\s*{name}\s*\)|"
        rf"\bstruct\s+(?:{_LEFT_KINDS})_notifier_head\s+{name}\b", text))


def _is_declaration(directory, r):
    """An extern declaration or a local head: not a chain definition."""
    if r["form"] not in ("variable", "bare"):
        return False
    try:
        with open(os.path.join(directory, r["file"]), encoding="utf-8",
                  errors="replace") as f:
            line = f.read().splitlines()[r["line"] - 1]
    except (OSError, IndexError):
        return False
    return bool(re.match(r"\s*extern\b", line) or
                line.startswith(("\t", " ")))


def unified_diff(changed, directory):
    """A patch of the changes, for patch -p1 and git apply."""
    out = []
    for path in sorted(changed):
        old = _text(directory, path)
        out += difflib.unified_diff(
            old.splitlines(keepends=True),
            changed[path].splitlines(keepends=True),
            f"a/{path}", f"b/{path}")
    return "".join(out)


def replace(path, text):
    """Writes `text` to `path` whole; the bytes a source held that are not
    UTF-8 are written back as they were read."""
    output.write_text(path, text, errors="surrogateescape")


def convert(directory, yaml_path, *, jobs=None, in_place=False, patch=None,
            report_path=None, exclude=(), cache=None):
    """Converts `directory` but the files of `exclude`; returns the report.
    Raises Error when the classification does not fit the sources, before
    writing anything.  `cache`: a folder of spatch's results by file
    (run_spatch())."""
    directory = os.path.abspath(directory)
    if not os.path.isdir(directory):
        raise Error(f"{directory}: no such directory")
    _, entries = classification.load(yaml_path)
    table = class_table(entries)
    bare = {e["chain"] for e in entries if e["declared"] == "bare"}
    skip = {os.path.normpath(p) for p in exclude}
    files = [p for p in candidates(directory, bare) if p not in skip]
    # spatch does not parse assembly: its calls are renamed by text.
    sources = [p for p in files if not p.endswith(".S")]
    say(f"==> converting {len(files)} files of {directory} "
        f"({tree.jobs(jobs)} spatch at once)")
    start = time.monotonic()
    changed, records, problems = run_spatch(directory, sources, table,
                                            tree.jobs(jobs),
                                            cache)
    unconverted = sorted({(r["file"], r["line"], r["why"])
                          for r in records if r["kind"] == "unconverted"})
    unresolved = sorted({
        f"{r['file']}:{r['line']}: the chain of {r['what']} is not known "
        f"here: it stays {r['declared']}"
        for r in records if r["kind"] == "unknown" and
        r["form"] in ("init", "initializer")})
    excluded = {(r["file"], r["line"]) for r in records
                if r["kind"] == "head" and r["cls"] == "excluded"}
    by_hand, comments = _text_pass(directory, files, changed, records,
                                   table, excluded, unconverted)
    api = api_texts(directory)
    added, errors = add_unregister(
        directory, [p for p in files if p.endswith(".c")], changed,
        tree.jobs(jobs), api)
    errors += check_fit(entries, records, directory, yaml_path)
    errors += unlisted_bare(directory, bare, yaml_path, api)
    errors += named_still(locks(records, True), changed)
    defined = definitions(records, directory)
    converted = {(r["what"], r["file"]) for r in defined
                 if r["kind"] == "head" and r["cls"] in ("atomic",
                                                         "blocking")}
    report = ConvertReport(
        directory=directory, classification=yaml_path,
        files_searched=len(files), files_changed=sorted(changed),
        chains_converted=len(converted),
        chains_excluded=sorted(f"{r['file']}:{r['line']}: {r['what']}"
                               for r in defined if r["cls"] == "excluded"),
        class_changed=sorted(f"{r['file']}:{r['line']}: {r['what']} "
                             f"{r['declared']} -> {r['cls']}"
                             for r in defined if r["kind"] == "head" and
                             r["cls"] in ("atomic", "blocking") and
                             r["declared"] in ("atomic", "blocking",
                                               "bare") and
                             r["declared"] != r["cls"]),
        unconverted=[f"{f}:{n}: {why}" for f, n, why in unconverted],
        converted_by_text=by_hand, comments_renamed=comments,
        locks_removed=locks(records, True),
        locks_kept=locks(records, False),
        unregister_added=added, init_unresolved=unresolved,
        spatch_problems=problems, errors=errors,
        seconds=round(time.monotonic() - start, 1))
    if report_path:
        output.write_json(report_path, report)
    if errors:
        raise Error(f"{yaml_path} does not fit the sources of "
                    f"{directory}:\n  " + "\n  ".join(errors[:30]))
    if patch:
        replace(patch, unified_diff(changed, directory))
    if in_place:
        for path, text in sorted(changed.items()):
            replace(os.path.join(directory, path), text)
    return report


def _text_pass(directory, files, changed, records, table, excluded,
               unconverted):
    """What spatch left to text: renames what it could not parse (the
    assembly, a use it failed on) and the comments, in `changed`, adds
    the heads it found to `records` and the uses still left to
    `unconverted`; returns the sites converted by text and the comments
    renamed, as file:line."""
    by_hand, comments = [], []
    for path in files:
        old = _text(directory, path)
        keep = {n for f, n in excluded if f == path}
        text = retab(old, changed.get(path, old))
        heads, lines, notes = [], [], []
        if path not in COMPAT:
            # The compatibility layer's macros name the typed API.
            text, heads, lines, notes = by_text(path, text, table, records,
                                                keep)
        records += heads
        by_hand += [f"{path}:{n}" for n in lines]
        comments += [f"{path}:{n}" for n in notes]
        if text != old:
            changed[path] = text
        for line, name in leftovers(path, text):
            if (path, line) not in excluded:
                unconverted.append((path, line, f"{name} is left: spatch "
                                    "could not convert this use"))
    return by_hand, comments


def locks(records, removed):
    """The locks of chain operations that the conversion removed (2005's
    3/7), or kept and why: [{"file", "line", "lock", "sections", "why"}]."""
    return sorted(({k: r[k] for k in ("file", "line", "lock", "sections",
                                      "why")}
                   for r in records if r["kind"] == "lock" and
                   r["removed"] == removed),
                  key=lambda r: (r["file"], r["line"]))


def named_still(removed, changed):
    """Errors, file:line, where a lock the conversion removed is still
    named outside a comment: a use in code that spatch could not parse
    (scoped_guard(), say), which would no longer compile."""
    errors = []
    for r in removed:
        text = re.sub(r"/\*.*?\*/|//[^\n]*",
                      lambda m: "\n" * m.group().count("\n"),
                      changed.get(r["file"], ""), flags=re.S)
        for n, line in enumerate(text.splitlines(), 1):
            if re.search(rf"\b{re.escape(r['lock'])}\b", line):
                errors.append(f"{r['file']}:{n}: {r['lock']} is still used "
                              "here, in code that spatch could not parse: "
                              "the conversion would remove it")
    return errors


def lock_line(r):
    return (f"{r['file']}:{r['line']}: {r['lock']}: "
            + "; ".join(r["sections"])
            + (f" (kept: {r['why']})" if r["why"] else ""))


def summary(report):
    lines = [f"    {len(report.files_changed)} files changed of "
             f"{report.files_searched} searched, "
             f"{report.chains_converted} chains converted, "
             f"{len(report.unconverted)} sites left for a person, "
             f"in {report.seconds}s"]
    lines += [f"    class changed: {c}" for c in report.class_changed]
    lines += [f"    excluded, left as it is: {c}"
              for c in report.chains_excluded]
    lines += [f"    converted by text, where spatch could not parse: {u}"
              for u in report.converted_by_text]
    if report.comments_renamed:
        lines.append(f"    {len(report.comments_renamed)} comment lines "
                     "now name the new API")
    lines += [f"    removed, guarding nothing but the chain: {lock_line(r)}"
              for r in report.locks_removed]
    lines += [f"    lock of chain operations kept: {lock_line(r)}"
              for r in report.locks_kept]
    lines += [f"    added, as 2005's 4/7 did: {a['file']}:{a['line']}: "
              f"{a['wrapper']}() beside {a['register']}()"
              for a in report.unregister_added]
    lines += [f"    not converted: {u}" for u in report.unconverted]
    lines += [f"    kind kept: {u}" for u in report.init_unresolved]
    lines += [f"    spatch: {p}" for p in report.spatch_problems]
    return "\n".join(lines)
