"""cpu probe: every thread of a multi-threaded program is sampled, and a forked
child is sampled under its own pid."""
import collections
import cpu_common as cc

t = cc.Checks()
out = cc.run("cpu_threads", "cpu_threads")
samples = cc.stacks(out)
per_tid = collections.Counter(tid for _, tid, st in samples if "thread_spin" in cc.functions(st))
t.check("the three spinning threads are all sampled", len(per_tid) == 3, dict(per_tid))
t.check("each thread gets a fair share",
        per_tid and min(per_tid.values()) > 0.2 * max(per_tid.values()), dict(per_tid))
t.check("all samples are from one process", len({pid for pid, _, _ in samples}) == 1)

out = cc.run("cpu_fork", "cpu_fork")
samples = cc.stacks(out)
leader = int(cc.meta(out, "leader_pid"))
child = collections.Counter(pid for pid, _, st in samples if "child_spin" in cc.functions(st))
t.check("the forked child's work is sampled", sum(child.values()) > 30, dict(child))
t.check("the child's samples carry the child's pid", child and leader not in child,
        "leader %d, %s" % (leader, dict(child)))
t.check("the child's stacks read main -> child_spin",
        all(cc.functions(st)[-2:] == ["main", "child_spin"] for _, _, st in samples
            if cc.functions(st) and cc.functions(st)[-1] == "child_spin"))
t.finish()
