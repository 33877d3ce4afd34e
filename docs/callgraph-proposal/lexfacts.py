"""Prototype (timing only): lexical per-file facts for the call graph."""
import json, re, sys, hashlib, time
TOK = re.compile(r"""
 (?P<ws>[ \t\r\f\v]+|\\\n)
|(?P<nl>\n)
|(?P<com>/\*.*?\*/|//[^\n]*)
|(?P<pp>^[ \t]*\#(?:[^\n\\]|\\.|\\\n)*)
|(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
|(?P<id>[A-Za-z_]\w*)
|(?P<num>\.?\d[\w.]*)
|(?P<op>->|[{}()\[\];,=.&*]|[^\s\w])
""", re.X | re.S | re.M)
KW = frozenset("if while for switch return sizeof do else case goto typeof __typeof__ "
               "defined __attribute__ asm __asm__ _Static_assert alignof __alignof__".split())
LOCK = re.compile(r"^(spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|raw_spin_lock(_irq|_irqsave|_bh|_nested)?|read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|rcu_read_lock(_bh|_sched)?|get_cpu)$")
UNLOCK = re.compile(r"^(spin_unlock(_irq|_irqrestore|_bh)?|raw_spin_unlock(_irq|_irqrestore|_bh)?|read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|local_irq_restore|local_irq_enable|local_bh_enable|preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?|put_cpu)$")
REG = frozenset("request_irq request_threaded_irq devm_request_irq devm_request_threaded_irq request_any_context_irq request_percpu_irq timer_setup tasklet_init tasklet_setup init_irq_work call_rcu INIT_WORK INIT_DELAYED_WORK kthread_run kthread_create netif_napi_add hrtimer_init".split())

def tokens(text):
    line = 1
    for m in TOK.finditer(text):
        k = m.lastgroup
        if k == "nl":
            line += 1
        elif k in ("ws", "com", "pp"):
            line += m.group().count("\n")
        else:
            yield k, m.group(), line

def facts(path, text):
    toks = list(tokens(text))
    out = []
    depth = 0; fn = None; fn_depth = 0; static = False
    held = []; snaps = []
    decl = []      # depth-0 tokens since last ; or }
    init_struct = None
    n = len(toks)
    i = 0
    while i < n:
        k, v, line = toks[i]
        if v == "{":
            if depth == 0:
                # function definition: ... ident ( ... ) {
                j = len(decl) - 1
                if j >= 0 and decl[j] == ")":
                    d = 0
                    while j >= 0:
                        if decl[j] == ")": d += 1
                        elif decl[j] == "(":
                            d -= 1
                            if d == 0: break
                        j -= 1
                    if j > 0 and re.match(r"[A-Za-z_]\w*$", decl[j-1]):
                        fn = decl[j-1]; fn_depth = 1
                        out.append({"k": "def", "name": fn, "l": line, "static": "static" in decl})
                elif "=" in decl and "struct" in decl:
                    s = decl.index("struct")
                    init_struct = "struct " + decl[s+1]
            snaps.append(list(held))
            depth += 1
        elif v == "}":
            depth -= 1
            prev = snaps.pop() if snaps else []
            if fn and depth >= 1:
                # a block ending in a jump does not fall through
                back = [t[1] for t in toks[max(0, i-12):i]]
                if ";" in back:
                    last = len(back) - 1 - back[::-1].index(";")
                    stmt = back[:last]
                    semi = [x for x in range(len(stmt)) if stmt[x] in (";", "{", "}")]
                    start = semi[-1] + 1 if semi else 0
                    if stmt[start:start+1] and stmt[start] in ("return", "goto", "break", "continue"):
                        held = prev
            if depth == 0:
                fn = None; held = []; decl = []; init_struct = None
        elif depth == 0:
            if v == ";":
                decl = []; init_struct = None
            else:
                decl.append(v)
        elif fn is None and init_struct and v == "." and i + 3 < n and toks[i+2][1] == "=" and toks[i+3][0] == "id" and toks[i+4][1] in (",", "}"):
            out.append({"k": "fptr", "struct": init_struct, "member": toks[i+1][1], "target": toks[i+3][1], "l": line})
        if fn and k == "id" and i + 1 < n and toks[i+1][1] == "(" and v not in KW:
            prevtok = toks[i-1][1]
            if prevtok in ("->", "."):
                out.append({"k": "icall", "member": v, "l": line, "fn": fn, "in": [h[0] for h in held]})
            else:
                rec = {"k": "call", "callee": v, "l": line, "fn": fn}
                if held: rec["in"] = [h[0] + ":" + str(h[1]) for h in held]
                out.append(rec)
                if LOCK.match(v):
                    held.append((v, line))
                elif UNLOCK.match(v) and held:
                    held.pop()
                elif v in REG:
                    # arguments at paren depth 1
                    d = 0; idx = 0; j = i + 1; args = []
                    while j < n:
                        t = toks[j][1]
                        if t == "(": d += 1
                        elif t == ")":
                            d -= 1
                            if d == 0: break
                        elif t == "," and d == 1: idx += 1
                        elif d == 1 and toks[j][0] == "id" and toks[j-1][1] in ("(", ",") and toks[j+1][1] in (",", ")"):
                            args.append((idx, t))
                        j += 1
                    for idx, a in args:
                        out.append({"k": "reg", "api": v, "idx": idx, "target": a, "l": line, "fn": fn})
        elif fn and v in ("->", ".") and i + 3 < n and toks[i+2][1] == "=" and toks[i+3][0] == "id" and toks[i+4][1] == ";":
            out.append({"k": "fptr_u", "member": toks[i+1][1], "target": toks[i+3][1], "l": line, "fn": fn})
        elif fn and k == "id" and v.startswith("GFP_") and v in ("GFP_KERNEL", "GFP_NOFS", "GFP_NOIO", "GFP_USER", "GFP_KERNEL_ACCOUNT"):
            out.append({"k": "gfp", "gfp": v, "l": line, "fn": fn})
        i += 1
    return out

if __name__ == "__main__":
    t0 = time.monotonic(); nrec = 0; nbytes = 0
    sink = open(sys.argv[2], "w") if len(sys.argv) > 2 else None
    for path in open(sys.argv[1]).read().split():
        with open(path, "rb") as f:
            raw = f.read()
        nbytes += len(raw)
        recs = facts(path, raw.decode("utf-8", "replace"))
        nrec += len(recs)
        if sink:
            sink.write(json.dumps({"file": path, "sha": hashlib.sha1(raw).hexdigest(), "facts": recs}) + "\n")
    dt = time.monotonic() - t0
    print(f"{nbytes/1e6:.1f} MB, {nrec} records, {dt:.1f} s, {nbytes/1e6/dt:.2f} MB/s", file=sys.stderr)
