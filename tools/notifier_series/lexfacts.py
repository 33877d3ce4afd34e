"""The facts of one C file that the call graph needs, read by a lexer:
its functions and function-like macros, each with the calls it makes in
order and its block structure (so that lock regions can be replayed once
the lock wrappers of the whole tree are known), the function pointers it
stores, the members of the structures it defines, and its notifier heads.

A lexer and not spatch: spatch needs 73 to 98 minutes for the whole tree
on two cores, this reads it in a few (docs/callgraph-proposal/README.md).
It does not preprocess: every #if branch is read, and a file whose braces
do not balance is reported by `facts()["unbalanced"]`.

Events of a function body, in order:
  (OPEN, else) (CLOSE,) (JUMP,)
                             a block opens (else: it is an else branch),
                             closes, closes after a jump
  (DEAD,) (LABEL,)           a return or goto statement; a label
  (CALL, callee, line, args, cond)
                             args: ((index, identifier), ...); cond: the
                             statement is a braceless if or else
  (ICALL, member, line, base_type, via)
                             a call through a member: x->a.b->member(),
                             base_type the structure of x when declared
                             here, via ("a", "b")
  (GFP, flag, line, callee)  a literal GFP flag that lets an allocation
                             sleep, passed to callee()
The calls at file level (DECLARE_WORK(w, fn);, module_init(fn);) are
CALL events of "toplevel".
"""

import re

from . import chain_api

OPEN, CLOSE, JUMP, CALL, ICALL, GFP, DEAD, LABEL = range(8)
VERSION = "8"           # bump when the facts change: the cache keys on it

TOKEN = re.compile(r"""
 (?P<nl>\n)
|[ \t\r\f\v]+|\\\n
|/\*(?P<com>.*?)\*/|//[^\n]*
|(?P<pp>^[ \t]*\#(?:[^\n\\]|\\.|\\\n)*)
|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'
|(?P<id>[A-Za-z_]\w*)
|(?P<num>\.?\d(?:[\w.]|[eEpP][+-])*)
|(?P<op>->|==|!=|<=|>=|&&|\|\||<<=?|>>=?|\+\+|--|[-+*/%&|^]=|[^\s\w])
""", re.X | re.S | re.M)

KEYWORDS = frozenset(
    "if while for switch return sizeof do else case goto typeof __typeof__ "
    "__typeof defined __attribute__ __attribute asm __asm__ _Static_assert "
    "static_assert alignof __alignof__ _Alignof offsetof __builtin_offsetof "
    "break continue default volatile __volatile__ unlikely likely "
    "__builtin_expect".split())
JUMPS = frozenset(("return", "goto", "break", "continue"))
# Attributes written as calls in front of, or after, a declarator.
ATTRIBUTES = re.compile(r"^(__attribute__|__attribute|__printf|__scanf|"
                        r"__aligned|__section|__acquires|__releases|"
                        r"__must_hold|__cond_acquires|__cond_lock|"
                        r"__diag_\w+|__alias|__malloc|__nocfi|"
                        r"__no_sanitize\w*|__assume_\w+|__counted_by|"
                        r"__weak|__visible|asmlinkage|notrace|__init|"
                        r"__exit|__cold|__always_inline|noinline|inline|"
                        r"__inline__|__inline|static|extern|const|"
                        r"EXPORT_SYMBOL\w*)$")
# Macros that define a function: SYSCALL_DEFINE3(name, ...) { ... }
# defines name(), as spatch names it.
DEFINERS = re.compile(r"^(?:COMPAT_)?SYSCALL_DEFINE\d$")
# GFP flags with __GFP_DIRECT_RECLAIM: an allocation that may sleep.
SLEEPING_GFP = frozenset(("GFP_KERNEL", "GFP_KERNEL_ACCOUNT", "GFP_USER",
                          "GFP_HIGHUSER", "GFP_HIGHUSER_MOVABLE", "GFP_NOIO",
                          "GFP_NOFS"))
HEAD_TYPE = re.compile(
    rf"^({chain_api.alternation(chain_api.KINDS)})_notifier_head$")
INCLUDE_C = re.compile(r'#\s*include\s+"([^"]+\.c)"')
DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)\(([^)]*)\)", re.S)


def tokens(text):
    """[(kind, value, line)], kind "id", "num", "op" or "pp"; comments and
    strings are dropped."""
    out, line = [], 1
    append = out.append
    for m in TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "nl":
            line += 1
        elif kind is None or kind == "com":
            line += m.group().count("\n")
        else:
            append((kind, m.group(), line))
            if kind == "pp":
                line += m.group().count("\n")
    return out


def _param_names(toks):
    """The names and structure types of a parameter list's tokens."""
    names, types, piece = [], {}, []
    for t in toks + [","]:
        if t != ",":
            piece.append(t)
            continue
        idents = [x for x in piece if re.match(r"[A-Za-z_]\w*$", x)]
        name = None
        if "(" in piece and "*" in piece:     # int (*cb)(int)
            k = piece.index("*")
            name = piece[k + 1] if k + 1 < len(piece) else None
        elif idents and idents[-1] not in ("void",):
            name = idents[-1]
        names.append(name)
        if name and "struct" in piece:
            k = piece.index("struct")
            if k + 1 < len(piece):
                types[name] = piece[k + 1]
        piece = []
    return names, types


def _declarator(decl):
    """(name, (start, end) of its parameter list) of a function defined
    by the depth-0 tokens `decl`, or None."""
    for j in range(len(decl) - 1):
        name = decl[j]
        if decl[j + 1] != "(" or not re.match(r"[A-Za-z_]\w*$", name) \
                or name in KEYWORDS or ATTRIBUTES.match(name):
            continue
        depth, k = 0, j + 1
        while k < len(decl):
            if decl[k] == "(":
                depth += 1
            elif decl[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        return name, (j + 2, k)
    return None


def _args(toks, i):
    """((index, identifier), ...) of the call whose "(" is toks[i]: the
    arguments that are one identifier, or & and one identifier; and the
    index just past its ")"."""
    found, depth, index, n = [], 0, 0, len(toks)
    j = i
    while j < n:
        v = toks[j][1]
        if v == "(":
            depth += 1
        elif v == ")":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1:
            if v == ",":
                index += 1
            elif toks[j][0] == "id" and j + 1 < n \
                    and toks[j + 1][1] in (",", ")") \
                    and toks[j - 1][1] in ("(", ",", "&"):
                found.append((index, v))
        j += 1
    return tuple(found), j


def _base(toks, i):
    """(variable, (members...)) of the expression before toks[i], the
    "->" or "." in front of a called member: p->a.b->m( gives ("p",
    ("a", "b"))."""
    via, j = [], i - 1
    while j >= 1 and toks[j][0] == "id" and toks[j - 1][1] in ("->", "."):
        via.append(toks[j][1])
        j -= 2
    if j >= 0 and toks[j][0] == "id":
        return toks[j][1], tuple(reversed(via))
    return None, tuple(reversed(via))


def _macro(text, line):
    """A function-like macro: (name, line, params, events)."""
    m = DEFINE.match(text.lstrip())
    if not m:
        return None
    body = tokens(text.lstrip()[m.end():].replace("\\\n", " \n"))
    events = []
    for i, (kind, v, _) in enumerate(body):
        if kind != "id" or i + 1 >= len(body) or body[i + 1][1] != "(" \
                or v in KEYWORDS:
            continue
        if i and body[i - 1][1] in ("->", "."):
            var, via = _base(body, i - 1)
            events.append((ICALL, v, line, None, via))
        else:
            args, end = _args(body, i + 1)
            events.append((CALL, v, line, args, False))
            gfp = [t[1] for t in body[i + 2:end] if t[1] in SLEEPING_GFP]
            if gfp:
                events.append((GFP, gfp[0], line, v))
    params = [p.strip() for p in m.group(2).split(",")]
    return m.group(1), line, params, events


def facts(text):
    """The facts of one file's text, a dict (see the module's doc)."""
    return _Scan(tokens(text)).run()


class _Scan:
    """facts() of a file's tokens: where the walk is, and what it found."""

    def __init__(self, toks):
        self.toks = toks
        self.funcs, self.macros, self.fptrs = [], [], []
        self.members, self.heads, self.inc_c = [], [], []
        self.toplevel = []     # DECLARE_WORK(w, fn); module_init(fn); ...
        self.depth, self.decl = 0, []
        self.func = None       # [name, line, static, params, events, gfp]
        self.events = None
        self.types = {}        # variable -> struct, in the current function
        self.stack = []        # per open brace: ("fn"|"struct"|"init"|
        #                        "block", struct name or None)
        self.stmt, self.last_stmt = [], None

    def run(self):
        toks, i = self.toks, 0
        while i < len(toks):
            kind, v, line = toks[i]
            if kind == "pp":
                self._directive(v, line)
            elif v == "{":
                self._open(line)
            elif v == "}":
                self._close(i)
            elif v == ";":
                self._end(line)
            else:
                i = self._word(i)
                continue
            i += 1
        return {"funcs": self.funcs, "macros": self.macros,
                "fptrs": self.fptrs, "members": self.members,
                "heads": self.heads, "inc_c": self.inc_c,
                "toplevel": self.toplevel,
                "unbalanced": self.depth != 0 or bool(self.stack)}

    def _top(self):
        return self.stack[-1] if self.stack else None

    def _directive(self, v, line):
        m = INCLUDE_C.match(v.lstrip())
        if m:
            self.inc_c.append(m.group(1))
        elif "(" in v and "define" in v:
            mac = _macro(v, line)
            if mac and mac[3]:
                self.macros.append(mac)

    def _open(self, line):
        top, stmt = self._top(), self.stmt
        if top and top[0] == "init":
            self.stack.append(("init", None if stmt[-1:] == ["="]
                               else top[1]))
        elif stmt[-1:] == ["="]:
            self.stack.append(("init", _struct_of(stmt)))
        elif self.func is None:
            what = _opening(self.decl, stmt, top)
            if what[0] == "fn":
                name, static, params, ptypes, gfp = what[1:]
                self.events = []
                self.func = [name, line, static, params, self.events, gfp]
                self.funcs.append(self.func)
                self.types = dict(ptypes)
                self.stack.append(("fn", None))
            else:
                self.stack.append(what)
        else:
            self.stack.append(("block", None))
            self.events.append((OPEN, stmt[:1] == ["else"]))
        self.depth += 1
        self.decl, self.stmt = [], []

    def _close(self, i):
        self.depth -= 1
        frame = self.stack.pop() if self.stack else ("block", None)
        if self.func is not None:
            if frame[0] == "fn":
                self.func, self.events, self.types = None, None, {}
            elif frame[0] == "block":
                jumped = (self.last_stmt in JUMPS
                          and self.toks[i - 1][1] == ";")
                self.events.append((JUMP,) if jumped else (CLOSE,))
        if frame[0] != "init":
            self.decl, self.stmt = [], []
        self.last_stmt = None
        if self.depth < 0:
            self.depth, self.stack = 0, []

    def _end(self, line):
        top, stmt, func = self._top(), self.stmt, self.func
        if top and top[0] == "struct" and func is None:
            _member(stmt, top[1], self.members, self.heads, line)
        elif func is not None or not top:
            _variable(stmt, self.types, self.heads, line,
                      func[0] if func else None)
        self.last_stmt = stmt[0] if stmt else None
        if func is not None and self.last_stmt in ("return", "goto") \
                and top and top[0] in ("fn", "block"):
            self.events.append((DEAD,))
        self.stmt = []
        if self.depth == 0:
            self.decl = []

    def _word(self, i):
        """Takes the word or punctuation at `i`; the index of the next."""
        toks, stmt = self.toks, self.stmt
        kind, v, line = toks[i]
        if self.depth == 0:
            self.decl.append(v)
        stmt.append(v)
        if kind != "id":
            return i + 1
        following = toks[i + 1][1] if i + 1 < len(toks) else None
        if not self.stack and following == "(" and \
                (len(stmt) == 1 or stmt[:-1] == ["static"]):
            self.toplevel.append((CALL, v, line, _args(toks, i + 1)[0],
                                  False))
        if len(stmt) == 1 and self.func is not None and following == ":" \
                and v not in ("case", "default") \
                and self.stack and self.stack[-1][0] in ("fn", "block"):
            self.events.append((LABEL,))
        return _in_body(toks, i, self.func, self.events, self.types,
                        self.stack, self.fptrs, stmt[0] in ("if", "else"))


def _struct_of(stmt):
    """T of a statement declaring a `struct T`, or None."""
    if "struct" in stmt:
        k = stmt.index("struct")
        if k + 1 < len(stmt):
            return stmt[k + 1]
    return None


def _opening(decl, stmt, top):
    """What a "{" outside a function and an initialiser opens: ("fn",
    name, static, params, param types), ("struct", name) or ("block",
    None)."""
    if stmt[-1:] in (["struct"], ["union"]):
        return ("struct", None)
    if stmt[-2:-1] in (["struct"], ["union"]):
        return ("struct", stmt[-1])
    if top and top[0] == "struct":
        return ("struct", top[1])
    found = _declarator(decl) if decl else None
    if found and not top:
        name, (a, b) = found
        params, ptypes = _param_names(decl[a:b])
        if DEFINERS.match(name):
            name = params[0] or name if params else name
        return ("fn", name, "static" in decl[:a], params, ptypes,
                "gfp_t" in decl[a:b])
    return ("block", None)


def _member(stmt, struct, members, heads, line):
    """A member declaration of structure `struct`."""
    if "struct" not in stmt or stmt.index("struct") > 2:
        return
    stmt = stmt[stmt.index("struct"):]
    if len(stmt) < 3:
        return
    t = stmt[1]
    idents = [x for x in stmt[2:] if re.match(r"[A-Za-z_]\w*$", x)]
    if not idents or "(" in stmt:
        return
    name = idents[0]
    members.append((struct, name, t))
    m = HEAD_TYPE.match(t)
    if m and struct:
        heads.append({"kind": m.group(1), "struct": struct, "name": name,
                      "line": line, "array": "[" in stmt,
                      "pointer": "*" in stmt, "fn": None})


def _variable(stmt, types, heads, line, fn):
    """A declaration: `struct T *x` gives x's type; a head is recorded."""
    if "=" in stmt:
        stmt = stmt[:stmt.index("=")]
    if "struct" not in stmt:
        return
    k = stmt.index("struct")
    if k + 2 >= len(stmt) or "(" in stmt:
        return
    t, j = stmt[k + 1], k + 2
    while j < len(stmt) and stmt[j] == "*":
        j += 1
    if j < len(stmt) and re.match(r"[A-Za-z_]\w*$", stmt[j]):
        types[stmt[j]] = t
        m = HEAD_TYPE.match(t)
        if m and "extern" not in stmt and fn is None:
            heads.append({"kind": m.group(1), "struct": None,
                          "name": stmt[j], "line": line,
                          "array": "[" in stmt[j:], "pointer":
                          "*" in stmt[k:j], "fn": fn,
                          "static": "static" in stmt[:k]})


def _in_body(toks, i, func, events, types, stack, fptrs, cond):
    """Reads the identifier toks[i] in context; returns the next index."""
    kind, v, line = toks[i]
    n = len(toks)
    nxt = toks[i + 1][1] if i + 1 < n else ""
    prev = toks[i - 1][1] if i else ""
    top = stack[-1] if stack else None
    if top and top[0] == "init" and prev == "." and nxt == "=" \
            and i + 3 < n and toks[i + 2][0] == "id" \
            and toks[i + 3][1] in (",", "}"):
        fptrs.append((top[1], v, toks[i + 2][1], line,
                      func[0] if func else None))
        return i + 3
    if func is None:
        return i + 1
    if nxt == "(" and v not in KEYWORDS:
        if prev in ("->", "."):
            var, via = _base(toks, i - 1)
            events.append((ICALL, v, line, types.get(var), via))
            return i + 1
        args, end = _args(toks, i + 1)
        events.append((CALL, v, line, args, cond))
        for k in range(i + 2, end):
            if toks[k][1] in SLEEPING_GFP and toks[k - 1][1] in "(,|" \
                    and toks[k + 1][1] in "),|":
                events.append((GFP, toks[k][1], line, v))
                break
        return i + 1
    if nxt == ")" and prev in ("->", ".") and i + 2 < n \
            and toks[i + 2][1] == "(":          # (*p->op)(...)
        var, via = _base(toks, i - 1)
        events.append((ICALL, v, line, types.get(var), via))
        return i + 1
    if prev in ("->", ".") and nxt == "=" and i + 3 < n \
            and toks[i + 2][0] == "id" and toks[i + 3][1] == ";":
        var, via = _base(toks, i - 1)
        base_type = types.get(var) if not via else None
        fptrs.append((base_type, v, toks[i + 2][1], line, func[0], var,
                      via))
        return i + 3
    return i + 1
