/* probe_list: the registry of probes, one line each: PROBE(name) for the
 * `const struct probe_ops probe_name` its file defines (probe.h). Included
 * by probes.c only, which makes probe_table of it; the probes start in the
 * order of what they need and provide (probe_order), not of these lines. */
PROBE(proc)
PROBE(system)
PROBE(alloc)
PROBE(cpu)
PROBE(offcpu)
PROBE(syscalls)
PROBE(counters)
PROBE(python)
PROBE(logfile)
PROBE(asyncio)
PROBE(cuda)
PROBE(nvtx)
PROBE(nvml)
PROBE(function)
PROBE(pyfunction)
