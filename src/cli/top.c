/* sonde top: a live view of a running process, refreshed every second: its
 * hottest functions over a sliding window, its threads' state, its RSS and
 * the GPUs' use. It attaches as `sonde attach` does (the process is never
 * stopped or signalled), records into a temporary directory that it removes
 * at the end, and writes no report. Keys: q quits, p pauses, s sorts by self
 * or total time. */
#include "attach.h"
#include "cli.h"
#include "live.h"
#include "profile.h"
#include "../probes/nvml_api.h"
#include "../record/recorder.h"
#include "../target/procfs.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOP_PROBES "proc,cpu,python" /* and nvml where a driver answers */

static void top_usage(FILE *out)
{
	fputs("usage: sonde top [options] PID|NAME\n\n"
	      "A live view of a running process, refreshed every second: its hottest\n"
	      "functions over the last seconds (Python functions when it runs Python,\n"
	      "else native ones), its threads (running, queued for a CPU, waiting,\n"
	      "holding the GIL), its RSS and the GPUs' use. The process is found and\n"
	      "followed as by 'sonde attach', never stopped or signalled; nothing is\n"
	      "kept on disk (the recording goes to a temporary directory, removed at\n"
	      "the end). Needs a terminal.\n\n"
	      "keys: q quit, p pause or resume, s sort by self or total time\n\n"
	      "options:\n"
	      "  -w, --window SECS    the sliding window the shares are of (default 5)\n"
	      "  -r, --rate HZ        stack sampling rate (default 99)\n"
	      "      --probes LIST    the probes (default " TOP_PROBES ", and nvml with an\n"
	      "                       NVIDIA driver)\n"
	      "  -d, --duration SECS  quit after SECS\n"
	      "  -h, --help           this help\n",
	      out);
}

/* Takes -w/--window out of the arguments (attach's parser knows the rest). */
static int window_take(int *argc, char **argv, int64_t *window_ns)
{
	int n = 0;
	for (int i = 0; i < *argc; i++) {
		const char *v = NULL;
		if (i > 0 && (!strcmp(argv[i], "-w") || !strcmp(argv[i], "--window"))) {
			if (i + 1 >= *argc) {
				cli_error("%s needs a number of seconds", argv[i]);
				return CLI_USAGE;
			}
			v = argv[++i];
		} else if (i > 0 && !strncmp(argv[i], "--window=", 9)) {
			v = argv[i] + 9;
		} else {
			argv[n++] = argv[i];
			continue;
		}
		char *end;
		double s = strtod(v, &end);
		if (*end || !(s >= 1 && s <= 600)) {
			cli_error("--window '%s' is not a number of seconds from 1 to 600", v);
			return CLI_USAGE;
		}
		*window_ns = (int64_t)(s * 1e9);
	}
	*argc = n;
	argv[n] = NULL;
	return -1;
}

/* Whether NVML starts here: the nvml probe is asked for only then (asked
 * for and missing, it would warn across the screen). */
static int gpu_driver_here(void)
{
	struct nvml_api api;
	struct strbuf why = STRBUF_INIT;
	unsigned int n;
	int ok = !nvml_api_open(&api, &n, &why);
	if (ok)
		api.shutdown();
	strbuf_release(&why);
	return ok;
}

/* Removes the temporary recording's files and directory. */
static void scratch_remove(const char *dir)
{
	static const char *const files[] = {"profile.db", "profile.db-wal", "profile.db-shm",
					    "profile.db-journal"};
	char path[4096];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

int cmd_top(int argc, char **argv)
{
	int64_t window_ns = LIVE_WINDOW_NS_DEFAULT;
	struct recorder *rec = NULL;
	struct live *view = NULL;
	char comm[64] = "";
	struct profile_args a;
	struct strbuf err = STRBUF_INIT, db = STRBUF_INIT;
	const char *tmp = getenv("TMPDIR");
	struct strbuf dirs = STRBUF_INIT;
	int rc = window_take(&argc, argv, &window_ns);
	if (rc >= 0)
		return rc;
	rc = attach_target_resolve(argc, argv, top_usage, &a);
	if (rc >= 0)
		return rc;
	if (!isatty(STDOUT_FILENO)) {
		cli_error("sonde top draws on a terminal and standard output is not one ('sonde "
			  "attach %d -d SECS' writes a report instead)",
			  (int)a.pid);
		return CLI_USAGE;
	}
	if (!a.so.only_probes)
		a.so.only_probes = gpu_driver_here() ? TOP_PROBES ",nvml" : TOP_PROBES;
	struct procfs_stat st;
	if (!procfs_read_stat(a.pid, 0, &st))
		snprintf(comm, sizeof(comm), "%s", st.comm);
	strbuf_addf(&dirs, "%s/sonde-top-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	char *made = mkdtemp(dirs.buf);
	rc = 1;
	if (!made) {
		cli_error("%s: %s (sonde top keeps its recording there while it runs)", dirs.buf,
			  strerror(errno));
		goto out;
	}
	strbuf_addf(&db, "%s/profile.db", made);
	if (recorder_open(db.buf, &rec, &err)) {
		cli_error("%s", err.buf);
		scratch_remove(made);
		goto out;
	}
	struct strbuf title = STRBUF_INIT;
	strbuf_addf(&title, "sonde top: pid %d (%s)", (int)a.pid, comm);
	view = live_new(rec, title.buf, window_ns, 1);
	strbuf_release(&title);
	a.so.hooks = live_hooks(view);
	struct session_result res;
	live_enter(view);
	int srun = session_run(&a.so, rec, &res, &err);
	live_leave(view);
	recorder_close(rec);
	scratch_remove(made);
	if (srun) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (res.target_exited)
		fprintf(stderr, "sonde: process %d exited\n", (int)a.pid);
	rc = 0;
out:
	live_free(view);
	strbuf_release(&err);
	strbuf_release(&db);
	strbuf_release(&dirs);
	return rc;
}
