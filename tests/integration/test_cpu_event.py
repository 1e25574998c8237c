"""--event: sampling on page-faults puts alloc_rss's samples in main, the one
function that touches fresh memory, and records the event; an event this
machine cannot open (a hardware one without a PMU) or an unknown name is
refused before anything runs, with a line naming it and the events that
open here."""
import json
import os
import subprocess
import cpu_common as cc

t = cc.Checks()


def sonde(*args):
    return subprocess.run([cc.SONDE, "run", "-q", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


p = sonde("--event", "no-such-event", "--", "true")
t.check("an unknown event is refused, naming the known ones",
        p.returncode == 2 and "no-such-event" in p.stderr and "page-faults" in p.stderr, p.stderr)

p = sonde("--event", "cache-misses", "-o", os.path.join(cc.TMP, "event_cache"), "--force",
          "--", "true")
if p.returncode == 2:
    t.check("a hardware event without a PMU is refused in one line naming it and what opens",
            "cache-misses" in p.stderr and "page-faults" in p.stderr and
            len(p.stderr.strip().splitlines()) == 1, p.stderr)
else:
    t.check("cache-misses opens where the hardware counts it", p.returncode == 0, p.stderr)

out = cc.run("cpu_event_faults", "alloc_rss", "96",
             sonde_args=("--event", "page-faults", "-r", "2000", "--probes", "proc,cpu"))
t.check("the event is recorded", cc.meta(out, "cpu_event") == "page-faults")
report = json.load(open(os.path.join(out, "report.json")))
hot = report.get("hotspots", [])
t.check("page-fault samples land in main, which touches the memory",
        hot and hot[0]["function"] == "main" and hot[0]["self_pct"] > 50, hot[:3])
t.check("hotspots_source names the event",
        report.get("hotspots_source", {}).get("event") == "page-faults",
        report.get("hotspots_source"))
with open(os.path.join(out, "report.md")) as f:
    t.check("report.md says the hotspots count the event, not time",
            "of the page-faults event (--event): they count where page-faults happen, not time"
            in f.read())
t.finish()
