"""What struct notifier_head costs in memory (make bench, issue 18): the
bytes of a head of each kind as the compiler lays it out with the
kernel's own flags (kbuild's command line of kernel/notifier.o, a probe
built the way kbuild's asm-offsets are, <linux/kbuild.h>'s DEFINE), with
and without lockdep; what the series adds to the chains of the
classification, at file scope and in the arrays of heads that structures
embed; and `size vmlinux` of the pristine and the series' trees."""

import os
import re
import shlex
import subprocess
import tempfile

from . import (arches, boottest, chain_api, classification, classify,
               distcc, output, patches, tree)
from .progress import Error, Step, say

# The kinds a chain's head is declared with (classification.DECLARED).
KINDS = {"atomic": "struct atomic_notifier_head",
         "blocking": "struct blocking_notifier_head",
         "raw": "struct raw_notifier_head",
         "srcu": "struct srcu_notifier_head",
         "bare": "struct notifier_block *"}
NEW = ("notifier_head", "struct notifier_head")
# The object whose kbuild command line the probes borrow.
OBJECT = "kernel/notifier.o"
WRAPPERS = ("ccache", "distcc")
VALUE = re.compile(r'"->(\w+) \$?(-?\d+) ')
# An array of heads: its kind, its name and its dimension.
ARRAY = re.compile(rf"\b({chain_api.alternation(chain_api.KINDS)})"
                   r"_notifier_head\s+(\w+)\s*"
                   r"\[([^]]+)\]")
ARRAY_GREP = r"_notifier_head[[:space:]]+[[:alnum:]_]+[[:space:]]*\["
# What opens a structure's body: "struct name" before its brace.
STRUCT_HEAD = re.compile(r"\bstruct\s+(\w+)\s*$")
# The kernel the vmlinux sizes are measured on: x86_64's defconfig, with
# this fragment saying what it must not have (lockdep).
SIZE_FRAGMENT = os.path.join(tree.REPO, "tools", "size.config")
SIZE_BASE = ("defconfig",)


def command_line(build_dir):
    """(kbuild's argv of OBJECT in `build_dir` without its wrapper, its
    dependency file, -c, -o and source, the source tree it was configured
    for)."""
    path = os.path.join(build_dir, os.path.dirname(OBJECT),
                        f".{os.path.basename(OBJECT)}.cmd")
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline()
    except OSError as e:
        raise Error(f"{path}: {e.strerror} (is {build_dir} a built kernel?)")
    name, sep, cmd = first.partition(" := ")
    if not sep or not name.endswith("_" + OBJECT):
        raise Error(f"{path}:1: not kbuild's command of {OBJECT}")
    argv = shlex.split(cmd)
    while argv and os.path.basename(argv[0]) in WRAPPERS:
        argv.pop(0)
    # The compiler's command ends with the source; objtool's may follow.
    ends = [k for k, arg in enumerate(argv)
            if arg.endswith("/" + OBJECT[:-2] + ".c")]
    if not ends:
        raise Error(f"{path}:1: no source of {OBJECT} in the command")
    source, argv = argv[ends[0]], argv[:ends[0]]
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif arg != "-c" and not arg.startswith("-Wp,-MMD"):
            kept.append(arg)
    return kept, source[:-len(OBJECT[:-2] + ".c") - 1]


def probe(build_dir, values, includes=(), tree_path=None, dirs=()):
    """{name: value} of the C constant expressions `values` ({name: text})
    after `includes`, compiled with kbuild's flags in `build_dir` on the
    checkout `tree_path` (default: the one it was configured for), `dirs`
    searched first for "..."."""
    argv, configured = command_line(build_dir)
    tree_path = tree_path or configured
    argv = [a.replace(configured, tree_path) for a in argv]
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "probe.c")
        with open(source, "w", encoding="utf-8") as f:
            f.write("#include <linux/kbuild.h>\n"
                    + "".join(f"#include {i}\n" for i in includes)
                    + "void notifier_series_probe(void);\n"
                    "void notifier_series_probe(void)\n{\n"
                    + "".join(f"\tDEFINE({name}, {text});\n"
                              for name, text in values.items()) + "}\n")
        proc = subprocess.run([argv[0]] + [f"-I{d}" for d in dirs]
                              + argv[1:] + ["-S", "-o", "-", source],
                              cwd=build_dir, capture_output=True, text=True)
    if proc.returncode:
        errors = [line.replace(tmp + "/", "") for line in
                  proc.stderr.splitlines() if "error" in line]
        raise Error("the probe did not compile: "
                    + ("; ".join(errors[:3]) or proc.stderr.strip()[:300]))
    found = {m[1]: int(m[2]) for m in VALUE.finditer(proc.stdout)}
    missing = sorted(set(values) - set(found))
    if missing:
        raise Error(f"the probe gave no value for {', '.join(missing)}")
    return found


def head_sizes(build_dir, pristine, new):
    """{kind: bytes} of KINDS in the checkout `pristine`, and
    notifier_head's in the checkout `new` (with the core patches), with
    the configuration of `build_dir`."""
    sizes = probe(build_dir, {k: f"sizeof({t})" for k, t in KINDS.items()},
                  ("<linux/notifier.h>", "<linux/srcu.h>"), pristine)
    sizes.update(probe(build_dir, {NEW[0]: f"sizeof({NEW[1]})"},
                       ("<linux/notifier.h>",), new))
    return sizes


def growth(sizes, declared):
    """The bytes a head declared `declared` gains as a notifier_head."""
    return sizes[NEW[0]] - sizes[declared]


def arrays(tree_path):
    """The arrays of heads in the C files of the checkout `tree_path`,
    at file scope or in a structure (not in a function): [{"file",
    "line", "kind", "name", "dimension", "structure" (None at file
    scope)}]."""
    proc = subprocess.run(["git", "-C", tree_path, "grep", "-n", "-E",
                           ARRAY_GREP, "--", "*.c", "*.h"],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise Error(f"git grep in {tree_path} failed: {proc.stderr.strip()}")
    found = []
    for hit in proc.stdout.splitlines():
        path, line, text = hit.split(":", 2)
        m = ARRAY.search(text)
        if not m:
            continue
        if text.lstrip().startswith(("*", "//", "/*")):
            continue
        with open(os.path.join(tree_path, path), encoding="utf-8",
                  errors="replace") as f:
            where, structure = scope(f.read(), int(line))
        if where == "local":
            continue
        found.append({"file": path, "line": int(line), "kind": m[1],
                      "name": m[2], "dimension": m[3].strip(),
                      "structure": structure})
    return found


# What scope() reads of C: comments, strings and characters (skipped),
# braces, semicolons and newlines.
CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'
                  r"'(?:\\.|[^'\\\n])*'|[{};]|\n", re.S)


def scope(text, line):
    """Where line `line` of the C `text` is: ("file", None) at file scope,
    ("struct", its name) in a structure, ("local", None) in a function or
    an initialiser."""
    opened, at, since = [], 1, 0
    for m in CODE.finditer(text):
        token = m.group()
        at += token.count("\n")
        if at > line:
            break
        if token == "{":
            head = CODE.sub(" ", text[since:m.start()])
            found = STRUCT_HEAD.search(head)
            opened.append(found[1] if found else None)
        elif token == "}" and opened:
            opened.pop()
        if token in "{};":
            since = m.end()
    if not opened:
        return "file", None
    return ("struct", opened[-1]) if opened[-1] else ("local", None)


def array_count(build_dir, tree_path, array):
    """(the number of heads of `array`, None) or (None, why not): its
    dimension computed by the compiler after the file's own text, in the
    checkout `tree_path` with the configuration of `build_dir`."""
    path = os.path.join(tree_path, array["file"])
    try:
        value = probe(build_dir, {"count": f"({array['dimension']})"},
                      (f'"{path}"',), tree_path,
                      dirs=(os.path.dirname(path),))
    except Error as e:
        return None, f"not computed with x86_64's headers: {e}"
    return value["count"], None


def chain_of(array):
    """The name of `array`'s chain in the classification."""
    if array["structure"]:
        return f"struct {array['structure']}.{array['name']}"
    return array["name"]


def cost(entries, sizes, found):
    """What the series adds, with `sizes` (head_sizes()), to the chains
    it converts (classification entries) and to the arrays `found`
    (arrays() with their "count")."""
    converted = {e.key: e for e in entries
                 if e["class"] in ("atomic", "blocking")}
    counts = {(chain_of(a), a["file"]): a.get("count") for a in found}
    heads = added = 0
    unknown = []
    for key, e in sorted(converted.items()):
        if e["chain"].startswith("struct "):
            continue
        count = counts.get(key, 1)
        if count is None:
            unknown.append(e["chain"])
            continue
        heads += count
        added += count * growth(sizes, e["declared"])
    ranked = []
    for a in found:
        e = converted.get((chain_of(a), a["file"]))
        if not e or not a["structure"]:
            continue
        each = growth(sizes, e["declared"])
        ranked.append({"structure": a["structure"], "member": a["name"],
                       "where": f"{a['file']}:{a['line']}",
                       "heads": a.get("count"), "why": a.get("why"),
                       "bytes_per_instance": (None if a.get("count") is None
                                              else a["count"] * each)})
    ranked.sort(key=lambda r: -(r["bytes_per_instance"] or 0))
    return {"growth": {k: growth(sizes, k) for k in KINDS},
            "file_scope": {"heads": heads, "bytes": added,
                           "unknown": unknown},
            "arrays": ranked}


def vmlinux_size(build_dir):
    """{text, data, bss} of `size` on build_dir/vmlinux."""
    path = os.path.join(build_dir, "vmlinux")
    proc = subprocess.run(["size", path], capture_output=True, text=True)
    if proc.returncode:
        raise Error(f"size {path} failed: {proc.stderr.strip()}")
    text, data, bss = proc.stdout.splitlines()[1].split()[:3]
    return {"text": int(text), "data": int(data), "bss": int(bss)}


def _size_build(kver, checkout, name, folder, jobs):
    """vmlinux of `checkout`, configured with SIZE_BASE and
    SIZE_FRAGMENT; returns its build folder."""
    build_dir = os.path.join(os.path.dirname(checkout.path),
                             f"build-{kver}-size-{name}")
    with Step(f"building the {name} vmlinux ({', '.join(SIZE_BASE)}, "
              f"{os.path.relpath(SIZE_FRAGMENT, tree.REPO)})"):
        boottest.build(checkout, build_dir,
                       os.path.join(folder, f"build-{name}.log"), jobs,
                       fragments=[SIZE_FRAGMENT], base=SIZE_BASE)
    return build_dir


def measure(kver, *, work, out, jobs=None):
    """The record of bench.json's "memory": head sizes with and without
    lockdep, what the series adds (cost()) and the vmlinux sizes; what
    could not be measured says why.  The trees measured are named by
    their git trees ("trees"), which the cover letter compares with its
    own.  The build logs go to out/<kver>/memory/."""
    kernel_tree = tree.prepare(kver, work)
    path = kernel_tree.path
    jobs = distcc.build_jobs(jobs)
    final = os.path.join(out, kver, "memory")
    folder = output.stage(final)
    commits = {name: tree.git(path, "rev-parse", "-q", "--verify",
                              ref + "^{commit}", check=False).strip()
               for name, ref in (("pristine", tree.PRISTINE),
                                 ("core", patches.CORE_BRANCH),
                                 ("series", patches.SERIES_BRANCH))}
    if not commits["core"]:
        raise Error(f"{path} has no {patches.CORE_BRANCH} branch (make "
                    f"boot-test KVER={kver})")
    record = {"kernel": kernel_tree.version, "configs": {},
              "not_measured": {},
              "trees": {name: tree_of(path, c) for name, c in
                        commits.items() if c}}
    pristine = tree.Tree(kver, classify.pristine_checkout(kernel_tree),
                         kernel_tree.record)
    new = tree.worktree(kernel_tree, "size-series")
    tree.git(new.path, "checkout", "-q", "--detach",
             commits["series"] or commits["core"])
    plain = _size_build(kver, pristine, "pristine", folder, jobs)
    builds = {"without lockdep": plain,
              "with lockdep": boottest.build_folder(
                  kernel_tree, arches.get(arches.DEFAULT))}
    _, entries = classification.load(classification.yaml_path(kver))
    found = arrays(pristine.path)
    for config, build_dir in builds.items():
        if not os.path.exists(os.path.join(build_dir, OBJECT)):
            record["not_measured"][config] = (
                f"no {OBJECT} built in {build_dir}"
                + (f" (make boot-test KVER={kver})"
                   if build_dir != plain else ""))
            continue
        with Step(f"head sizes and arrays of heads {config} "
                  f"({build_dir})"):
            sizes = head_sizes(build_dir, pristine.path, new.path)
            counted = [dict(a, **dict(zip(("count", "why"), array_count(
                build_dir, pristine.path, a)))) for a in found]
        record["configs"][config] = dict(sizes=sizes, build=build_dir,
                                         **cost(entries, sizes, counted))
    record["vmlinux"] = {"config": f"x86_64 {' '.join(SIZE_BASE)} and "
                         f"{os.path.relpath(SIZE_FRAGMENT, tree.REPO)}",
                         "pristine": vmlinux_size(plain)}
    if commits["series"]:
        built = _size_build(kver, new, "series", folder, jobs)
        record["vmlinux"]["series"] = vmlinux_size(built)
        record["vmlinux"]["data_bss_change"] = sum(
            record["vmlinux"]["series"][k] - record["vmlinux"]["pristine"][k]
            for k in ("data", "bss"))
    else:
        record["not_measured"]["vmlinux of the series"] = (
            f"no {patches.SERIES_BRANCH} branch in {path} (make series "
            f"KVER={kver})")
    output.publish(folder, final)
    for line in lines(record):
        say("  " + line)
    return record


def tree_of(path, commit):
    """The git tree of `commit`: the same text gives the same tree, made
    again or not."""
    return tree.git(path, "rev-parse", commit + "^{tree}").strip()


def lines(record):
    """The record as sentences, for the terminal, the README and the
    cover letter."""
    out = []
    for config, c in record["configs"].items():
        s = c["sizes"]
        out.append(f"x86_64 {config}: struct notifier_head is "
                   f"{s[NEW[0]]} bytes, against "
                   + ", ".join(f"{s[k]} for {k}" for k in KINDS)
                   + "; a converted head grows by "
                   + ", ".join(f"{v:+d} ({k})" for k, v in c["growth"].items()
                               if k in ("atomic", "blocking", "bare")))
        fs = c["file_scope"]
        out.append(f"  the {fs['heads']} converted heads at file scope: "
                   f"{fs['bytes']:+d} bytes if every one is built"
                   + (f" (not counted: {', '.join(fs['unknown'])})"
                      if fs["unknown"] else ""))
        for a in c["arrays"][:3]:
            out.append(f"  struct {a['structure']}.{a['member']} "
                       f"({a['where']}): "
                       + (f"{a['heads']} heads, {a['bytes_per_instance']:+d}"
                          " bytes per instance" if a["heads"] is not None
                          else f"not counted: {a['why']}"))
    v = record.get("vmlinux", {})
    if "data_bss_change" in v:
        out.append(f"size vmlinux ({v['config']}): data+bss "
                   f"{v['pristine']['data'] + v['pristine']['bss']} "
                   f"pristine, {v['data_bss_change']:+d} bytes with the "
                   "series")
    for what, why in record["not_measured"].items():
        out.append(f"{what}: not measured, {why}")
    return out
