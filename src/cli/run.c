/* sonde run: profile a command from its start to its end. */
#include "cli.h"
#include "rundir.h"
#include "../record/recorder.h"
#include "../session/session.h"
#include "../target/spawn.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/parse.h"
#include "../util/strbuf.h"
#include "../version.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static void run_usage(FILE *out)
{
	fputs("usage: sonde run [options] -- COMMAND [ARGS...]\n\n"
	      "Runs COMMAND in its own process group, follows every process it starts,\n"
	      "and writes a report when it exits. Its output passes through unchanged\n"
	      "and is also stored, timestamped, in output.log. sonde exits with the\n"
	      "command's exit status (128+N when a signal N killed it; 127 when the\n"
	      "command is not found). Ctrl-C is passed to the command; the report is\n"
	      "still written from what was collected (a second Ctrl-C kills it).\n\n"
	      "options:\n"
	      "  -o, --output DIR     write the run here (default:\n"
	      "                       ./profile_output/<YYYYmmdd-HHMMSS>-<name>/, with\n"
	      "                       profile_output/latest pointing at it)\n"
	      "      --force          replace the sonde files already in -o DIR\n"
	      "  -d, --duration SECS  stop after SECS (suffixes ms, s, m): the command\n"
	      "                       gets SIGTERM, then SIGKILL after --grace\n"
	      "      --grace SECS     time between SIGTERM and SIGKILL (default 3)\n"
	      "      --interval SECS  period of the /proc readings: RSS timeline, CPU\n"
	      "                       and context switches (default 100ms)\n"
	      "      --probes LIST    only these probes, comma separated (proc, alloc)\n"
	      "      --memory[=MODE]  track heap allocations: peak, leaks, temporaries per\n"
	      "                       call site (an agent is preloaded into the command and\n"
	      "                       its children). MODE: sampled (default: Poisson samples\n"
	      "                       by bytes, low overhead) or full (every allocation)\n"
	      "      --memory-interval BYTES  mean bytes between two samples (default\n"
	      "                       524288; suffixes k, m)\n"
	      "  -q, --quiet          print no summary at the end\n"
	      "  -v, --verbose        say more about what sonde does (twice: debug)\n"
	      "  -h, --help           this help\n"
	      "      --version        sonde's version\n\n"
	      "The run directory holds profile.db (the recording), report.md,\n"
	      "report.json and output.log; 'sonde report DIR' re-renders them.\n",
	      out);
}

enum { OPT_FORCE = 256, OPT_GRACE, OPT_INTERVAL, OPT_PROBES, OPT_VERSION, OPT_MEMORY,
       OPT_MEMORY_INTERVAL };

static const struct option run_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "probes", required_argument, NULL, OPT_PROBES },
	{ "memory", optional_argument, NULL, OPT_MEMORY },
	{ "memory-interval", required_argument, NULL, OPT_MEMORY_INTERVAL },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int bad_duration(const char *opt, const char *arg)
{
	cli_error("%s '%s' is not a duration (examples: 10, 2.5s, 500ms, 1m)", opt, arg);
	return CLI_USAGE;
}

/* "524288", "512k", "1m": bytes, at least 1 and at most 1 GiB. */
static int parse_bytes(const char *s, int64_t *out)
{
	char num[32];
	size_t n = strlen(s);
	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, s, n + 1);
	long mult = 1;
	char last = num[n - 1];
	if (last == 'k' || last == 'K')
		mult = 1024;
	else if (last == 'm' || last == 'M')
		mult = 1024 * 1024;
	if (mult > 1)
		num[n - 1] = '\0';
	long v;
	if (parse_long_range(num, 1, (1L << 30) / mult, &v))
		return -1;
	*out = (int64_t)v * mult;
	return 0;
}

static void record_run_meta(struct recorder *rec, char *const *argv, const struct session_options *so)
{
	struct strbuf cmd = STRBUF_INIT;
	for (char *const *a = argv; *a; a++)
		strbuf_addf(&cmd, "%s%s", a == argv ? "" : " ", *a);
	record_meta(rec, "sonde_version", SONDE_VERSION);
	record_meta(rec, "command", cmd.buf);
	char stamp[64];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", localtime_r(&now, &tm));
	record_meta(rec, "started_at", stamp);
	record_meta_int(rec, "cpus_online", sysconf(_SC_NPROCESSORS_ONLN));
	record_meta_int(rec, "interval_ns", so->probe_cfg.interval_ns);
	struct utsname u;
	if (!uname(&u)) {
		record_meta(rec, "kernel", u.release);
		record_meta(rec, "machine", u.machine);
	}
	strbuf_release(&cmd);
}

int cmd_run(int argc, char **argv)
{
	const char *out_dir = NULL, *probes = NULL;
	int force = 0, quiet = 0, verbose = 0, c;
	struct session_options so = {
		.grace_ns = SESSION_GRACE_NS_DEFAULT,
		.capture_output = 1,
		.probe_cfg = { .interval_ns = 100 * NS_PER_MS, .rate_hz = 99,
			       .memory_interval_bytes = PROBE_MEMORY_INTERVAL_DEFAULT },
	};
	opterr = 0;
	optind = 1;
	/* '+': the first non-option starts the command, so `sonde run ls -l` works. */
	while ((c = getopt_long(argc, argv, "+o:d:qvh", run_options, NULL)) != -1) {
		switch (c) {
		case 'o': out_dir = optarg; break;
		case 'd':
			if (parse_duration_ns(optarg, &so.duration_ns))
				return bad_duration("-d", optarg);
			break;
		case OPT_GRACE:
			if (parse_duration_ns(optarg, &so.grace_ns))
				return bad_duration("--grace", optarg);
			break;
		case OPT_INTERVAL:
			if (parse_duration_ns(optarg, &so.probe_cfg.interval_ns) ||
			    so.probe_cfg.interval_ns < NS_PER_MS) {
				cli_error("--interval '%s' is not a duration of at least 1ms", optarg);
				return CLI_USAGE;
			}
			break;
		case OPT_FORCE: force = 1; break;
		case OPT_PROBES: probes = optarg; break;
		case OPT_MEMORY:
			if (!optarg || !strcmp(optarg, "sampled")) {
				so.probe_cfg.memory_mode = PROBE_MEMORY_SAMPLED;
			} else if (!strcmp(optarg, "full")) {
				so.probe_cfg.memory_mode = PROBE_MEMORY_FULL;
			} else {
				cli_error("--memory=%s: the mode is 'sampled' or 'full'", optarg);
				return CLI_USAGE;
			}
			break;
		case OPT_MEMORY_INTERVAL:
			if (parse_bytes(optarg, &so.probe_cfg.memory_interval_bytes)) {
				cli_error("--memory-interval '%s' is not a byte count from 1 to 1g "
					  "(examples: 524288, 64k, 1m)", optarg);
				return CLI_USAGE;
			}
			if (!so.probe_cfg.memory_mode)
				so.probe_cfg.memory_mode = PROBE_MEMORY_SAMPLED;
			break;
		case 'q': quiet = 1; break;
		case 'v': verbose++; break;
		case 'h': run_usage(stdout); return 0;
		case OPT_VERSION: printf("sonde %s\n", SONDE_VERSION); return 0;
		case ':':
			cli_error("option %s needs a value (see 'sonde run --help')", argv[optind - 1]);
			return CLI_USAGE;
		default:
			if (optopt)
				cli_error("unknown option -%c (see 'sonde run --help')", optopt);
			else
				cli_error("unknown option %s (see 'sonde run --help')", argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (optind >= argc) {
		cli_error("no command to profile (usage: sonde run [options] -- COMMAND [ARGS...])");
		return CLI_USAGE;
	}
	log_set_level(verbose >= 2 ? LOG_DEBUG : verbose ? LOG_INFO : LOG_WARN);
	so.argv = argv + optind;
	so.only_probes = probes;

	struct strbuf err = STRBUF_INIT, dir = STRBUF_INIT, db = STRBUF_INIT;
	int ret = CLI_USAGE;
	int rc = spawn_check_command(so.argv[0], &err);
	if (rc) {
		cli_error("%s", err.buf);
		ret = rc;
		goto out;
	}
	if (rundir_prepare(out_dir, so.argv[0], force, &dir, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (!out_dir)
		rundir_link_latest(dir.buf);
	strbuf_addf(&db, "%s/profile.db", dir.buf);
	struct recorder *rec;
	if (recorder_open(db.buf, &rec, &err)) {
		cli_error("%s", err.buf);
		ret = 1;
		goto out;
	}
	record_run_meta(rec, so.argv, &so);
	struct session_result res;
	rc = session_run(&so, rec, &res, &err);
	const char *failed = recorder_failed(rec);
	if (failed)
		cli_error("the recording is incomplete (%s); the report covers what was written",
			  failed);
	recorder_close(rec);
	if (rc) {
		cli_error("%s", err.buf);
		ret = rc > 0 ? rc : 1;
		goto out;
	}
	if (cli_render_run_dir(dir.buf, quiet) && !quiet)
		cli_error("the run finished but its report could not be written completely");
	ret = res.exit_code;
out:
	strbuf_release(&err);
	strbuf_release(&dir);
	strbuf_release(&db);
	return ret;
}
