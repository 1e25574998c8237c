/* profile: the shared half of run and attach. */
#include "profile.h"
#include "cli.h"
#include "focus.h"
#include "interim.h"
#include "live.h"
#include "manifest.h"
#include "progress.h"
#include "repeat.h"
#include "rundir.h"
#include "suggest.h"
#include "../probes/fnspec.h"
#include "../probes/perf_events.h"
#include "../record/recorder.h"
#include "../render/render.h"
#include "../session/sigguard.h"
#include "../target/machine.h"
#include "../util/clock.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/parse.h"
#include "../util/safefile.h"
#include "../util/strbuf.h"
#include "../version.h"

#include <errno.h>
#include <jansson.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

enum { OPT_FORCE = 256, OPT_GRACE, OPT_PROBES, OPT_VERSION, OPT_PID, OPT_MODE,
       OPT_NO_SUBPROCESSES, OPT_SHARE, OPT_MAX_OUTPUT, OPT_PHASE, OPT_FOCUS, OPT_REPEAT,
       OPT_FORMAT, OPT_JSON, OPT_LIVE,
       OPT_PROBE = 1024 /* + the index of a probe's option in profile_probe_options() */ };

/* The options of the session and the report; each probe's own are in its
 * file (probe_ops.options) and join these in profile_options_build(). */
static const struct option profile_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	{ "system-wide", no_argument, NULL, 'a' },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "probes", required_argument, NULL, OPT_PROBES },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "no-subprocesses", no_argument, NULL, OPT_NO_SUBPROCESSES },
	{ "share", no_argument, NULL, OPT_SHARE },
	{ "max-output", required_argument, NULL, OPT_MAX_OUTPUT },
	{ "phase", required_argument, NULL, OPT_PHASE },
	{ "repeat", required_argument, NULL, OPT_REPEAT },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "live", no_argument, NULL, OPT_LIVE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
};
#define PROFILE_OPTIONS_N (sizeof(profile_options) / sizeof(profile_options[0]))
#define PROBE_OPTIONS_MAX 48

/* Every probe's options, in the registry's order, into out (at most
 * PROBE_OPTIONS_MAX); returns their count. */
static size_t profile_probe_options(const struct probe_option **out)
{
	size_t n = 0;
	for (size_t i = 0; probe_table[i]; i++)
		for (const struct probe_option *o = probe_table[i]->options; o && o->name; o++)
			if (n < PROBE_OPTIONS_MAX)
				out[n++] = o;
	return n;
}

/* getopt_long's tables: the session's options and the probes' (val
 * OPT_PROBE + k for probe option k), NULL-terminated, and the short ones. */
struct profile_getopt {
	struct option longopts[PROFILE_OPTIONS_N + PROBE_OPTIONS_MAX + 1];
	char shortopts[64];
	const struct probe_option *probe[PROBE_OPTIONS_MAX];
	size_t nprobe;
};

static void profile_options_build(struct profile_getopt *g)
{
	memset(g, 0, sizeof(*g));
	memcpy(g->longopts, profile_options, sizeof(profile_options));
	g->nprobe = profile_probe_options(g->probe);
	/* '+': the first non-option starts the command, so `sonde run ls -l` works. */
	/* ':' first: a missing value is told apart from an unknown option. */
	size_t ns = (size_t)snprintf(g->shortopts, sizeof(g->shortopts), "+:o:d:aqvh");
	for (size_t k = 0; k < g->nprobe; k++) {
		const struct probe_option *o = g->probe[k];
		int val = o->short_name ? o->short_name : OPT_PROBE + (int)k;
		g->longopts[PROFILE_OPTIONS_N + k] = (struct option){ o->name, o->arg, NULL, val };
		if (o->short_name && ns + 4 < sizeof(g->shortopts))
			ns += (size_t)snprintf(g->shortopts + ns, sizeof(g->shortopts) - ns, "%c%s",
					       o->short_name, o->arg == PROBE_ARG_REQUIRED   ? ":"
							      : o->arg == PROBE_ARG_OPTIONAL ? "::"
											     : "");
	}
}

/* The probe option getopt answered c for; NULL when c is not one. */
static const struct probe_option *profile_probe_option(const struct profile_getopt *g, int c)
{
	if (c >= OPT_PROBE && c < OPT_PROBE + (int)g->nprobe)
		return g->probe[c - OPT_PROBE];
	for (size_t k = 0; c > 0 && c < 256 && k < g->nprobe; k++)
		if (g->probe[k]->short_name == c)
			return g->probe[k];
	return NULL;
}

/* One option's lines of --help: its names, then its text from column 23
 * (on a line of its own when the names reach it). */
static void option_help(FILE *out, const struct probe_option *o)
{
	char left[64];
	int n = snprintf(left, sizeof(left), "  %c%c%s --%s%s%s%s", o->short_name ? '-' : ' ',
			 o->short_name ? o->short_name : ' ', o->short_name ? "," : " ", o->name,
			 o->arg == PROBE_ARG_OPTIONAL ? "[=" : o->arg ? " " : "",
			 o->arg ? o->arg_name : "", o->arg == PROBE_ARG_OPTIONAL ? "]" : "");
	fputs(left, out);
	if (n > 21)
		fprintf(out, "\n%23s", "");
	else
		fprintf(out, "%*s", 23 - n, "");
	for (const char *line = o->help;;) {
		size_t len = strcspn(line, "\n");
		fprintf(out, "%.*s\n", (int)len, line);
		if (!line[len])
			break;
		line += len + 1;
		fprintf(out, "%23s", "");
	}
}

/* The probes' options in --help, under the name of the probe each belongs
 * to: attach leaves out those of run only. */
static void probe_options_help(FILE *out, int attach)
{
	for (size_t i = 0; probe_table[i]; i++) {
		int named = 0;
		for (const struct probe_option *o = probe_table[i]->options; o && o->name; o++) {
			if (attach && o->run_only)
				continue;
			if (!named++)
				fprintf(out, "  %s:\n", probe_table[i]->name);
			option_help(out, o);
		}
	}
}

void profile_args_help(FILE *out, int attach)
{
	fputs("  -o, --output DIR     write the run here (default:\n"
	      "                       ./profile_output/<YYYYmmdd-HHMMSS>-<name>/, with\n"
	      "                       profile_output/latest pointing at it)\n"
	      "      --force          replace the sonde files already in -o DIR\n"
	      "      --share          let others read the run (files 0666, directories\n"
	      "                       0777, less the umask); default: only you (0600/0700)\n",
	      out);
	if (!attach)
		fputs("      --max-output SIZE  most of the command's output kept in output.log\n"
		      "                       and the recording (default 64m; suffixes k, m, g; 0:\n"
		      "                       none); all of it still reaches the terminal\n",
		      out);
	if (attach)
		fputs("  -d, --duration SECS  detach after SECS (suffixes ms, s, m)\n", out);
	else
		fputs("  -a, --system-wide    profile every process of the machine instead of a\n"
		      "                       command, until -d or Ctrl-C (root): per process\n"
		      "                       and machine-wide, the hottest processes first\n",
		      out);
	if (!attach)
		fputs("  -d, --duration SECS  stop after SECS (suffixes ms, s, m): the command\n"
		      "                       gets SIGTERM, then SIGKILL after --grace\n"
		      "      --grace SECS     time between SIGTERM and SIGKILL (default 3)\n",
		      out);
	fputs("      --probes LIST    only these probes, comma separated; default: those\n"
	      "                       marked *\n",
	      out);
	for (size_t i = 0; probe_table[i]; i++)
		fprintf(out, "                       %c %-9s %s\n",
			probe_table[i]->enabled_by_default ? '*' : ' ', probe_table[i]->name,
			probe_table[i]->summary);
	fputs("      --focus LIST     measure these dimensions deeper and lead the report\n"
	      "                       with them, comma separated: cpu (stack rate 499 Hz\n"
	      "                       unless -r), memory (the allocation tracker, as\n"
	      "                       --memory; attach: RSS only), gpu (nvml, cuda;\n"
	      "                       interconnect is the same), io (offcpu), async\n"
	      "                       (asyncio). Default: sonde chooses from what it finds\n"
	      "                       and the report says what and why\n",
	      out);
	fputs("      --no-subprocesses  follow only the launched (attached) process, not\n"
	      "                       the processes it starts (default: all of them)\n",
	      out);
	fputs("      --mode MODE      what the Python hotspots count: cpu (samples standing\n"
	      "                       for CPU time, default), wall (every sample) or gil\n"
	      "                       (the thread holding the GIL); all three are recorded\n",
	      out);
	fputs("      --phase REGEX    how the command's lines mark its phases, instead of\n"
	      "                       the built-in forms ('phase=X start', 'Starting X',\n"
	      "                       'X done in 1.2s', '=== X ===', '[X] begin'): an\n"
	      "                       extended regex with the named groups (?P<name>...)\n"
	      "                       and optionally (?P<event>start|done) and\n"
	      "                       (?P<duration>...); without event each match starts\n"
	      "                       a phase that the next one ends\n",
	      out);
	if (!attach)
		fputs("      --repeat N       profile the command N times (1 to 100) into one\n"
		      "                       family: DIR/1 ... DIR/N and DIR/repeat.json; 'sonde\n"
		      "                       compare' then tests each change across the runs\n",
		      out);
	fputs("      --format LIST    also write the run in these export formats, comma\n"
	      "                       separated, into the run directory (pprof,\n"
	      "                       speedscope, chrome, ...: 'sonde export --format help')\n"
	      "      --json           print report.json on standard output at the end, as\n"
	      "                       one line after all the command's own output (with\n"
	      "                       --repeat, one line a run), for tools that drive sonde\n"
	      "      --live           while the command runs, show the live view of\n"
	      "                       'sonde top' (hot functions, threads, RSS, GPUs)\n"
	      "                       instead of its output, which goes to output.log;\n"
	      "                       q closes the view, the run goes on (needs a\n"
	      "                       terminal)\n"
	      "  -q, --quiet          print no summary at the end\n"
	      "  -v, --verbose        say more about what sonde does (twice: debug)\n"
	      "  -h, --help           this help\n"
	      "      --version        sonde's version\n"
	      "\noptions of the probes, under each probe's name:\n",
	      out);
	probe_options_help(out, attach);
}

/* "64m", "1g", "0": a size in bytes for --max-output, at most 1 TiB. */
static int parse_size(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -1;
	double mult = 1;
	if (*end == 'k' || *end == 'K')
		mult = 1024.0;
	else if (*end == 'm' || *end == 'M')
		mult = 1024.0 * 1024;
	else if (*end == 'g' || *end == 'G')
		mult = 1024.0 * 1024 * 1024;
	if (mult > 1)
		end++;
	if (*end || v * mult > (double)(1LL << 40))
		return -1;
	*out = (int64_t)(v * mult);
	return 0;
}

/* --probes: every name must be a probe; one typo would otherwise turn every
 * probe off without a word. */
static int check_probe_list(const char *list)
{
	struct strbuf names = STRBUF_INIT;
	for (size_t i = 0; probe_table[i]; i++)
		strbuf_addf(&names, "%s%s", i ? ", " : "", probe_table[i]->name);
	int bad = 0;
	for (const char *p = list; !bad; p++) {
		size_t n = strcspn(p, ",");
		struct suggest s;
		suggest_init(&s, p, n);
		size_t i = 0;
		for (; probe_table[i]; i++) {
			if (strlen(probe_table[i]->name) == n && !strncmp(probe_table[i]->name, p, n))
				break;
			suggest_try(&s, probe_table[i]->name);
		}
		if (!probe_table[i]) {
			if (!n)
				cli_error("--probes '%s': a probe name is empty (probes: %s)", list,
					  names.buf);
			else if (suggest_result(&s))
				cli_error("--probes: '%.*s' is not a probe (did you mean '%s'? probes: %s)",
					  (int)n, p, suggest_result(&s), names.buf);
			else
				cli_error("--probes: '%.*s' is not a probe (probes: %s)", (int)n, p,
					  names.buf);
			bad = 1;
		}
		p += n;
		if (!*p)
			break;
	}
	strbuf_release(&names);
	return bad;
}

/* Calls f(name, arg) for each name of a comma-separated list; stops at the
 * first non-zero answer and returns it. */
static int format_each(const char *list, int (*f)(const char *name, void *arg), void *arg)
{
	char name[64];
	for (const char *p = list;;) {
		size_t n = strcspn(p, ",");
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, p, n);
		name[n] = '\0';
		int rc = f(name, arg);
		if (rc)
			return rc;
		p += strcspn(p, ",");
		if (!*p++)
			return 0;
	}
}

static int format_check_one(const char *name, void *arg)
{
	(void)arg;
	if (!*name) {
		cli_error("--format: an empty name in the list (see 'sonde export --format help')");
		return -1;
	}
	return cli_export_format(name) ? 0 : -1;
}

static int check_format_list(const char *list) { return format_each(list, format_check_one, NULL); }

struct format_job {
	const char *dir;
	int quiet, failed;
};

/* Writes one export of the run; a failure is printed and the next is tried. */
static int format_write_one(const char *name, void *arg)
{
	struct format_job *job = arg;
	const struct exporter *e = exporter_find(name);
	if (e && cli_export_into_run(job->dir, e, job->quiet))
		job->failed = 1;
	return 0;
}

/* After the report: --format's exports into the run directory, then --json's
 * line. 0, or 1 when one of them could not be written. */
static int outputs_extra_write(const struct profile_args *a, const char *dir)
{
	struct format_job job = {dir, a->quiet, 0};
	if (a->formats)
		format_each(a->formats, format_write_one, &job);
	if (!a->json)
		return job.failed;
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/report.json", dir);
	json_error_t jerr;
	json_t *report = json_load_file(path.buf, 0, &jerr);
	if (!report || json_dumpf(report, stdout, JSON_COMPACT) || fputc('\n', stdout) == EOF ||
	    fflush(stdout)) {
		cli_error("--json: %s: %s", path.buf, report ? strerror(errno) : jerr.text);
		job.failed = 1;
	}
	json_decref(report);
	strbuf_release(&path);
	return job.failed;
}

/* run --live draws on the terminal: stdout must be one, and one view a run. */
static int live_check(const struct profile_args *a)
{
	if (a->repeat > 1) {
		cli_error("--live does not go with --repeat: the view follows one run");
		return -1;
	}
	if (!isatty(STDOUT_FILENO)) {
		cli_error("--live draws on a terminal and standard output is not one");
		return -1;
	}
	return 0;
}

/* What run -a cannot do: it starts nothing, so nothing can be preloaded. */
static int whole_machine_check(const struct profile_args *a)
{
	const char *bad = a->so.probe_cfg.memory_mode ? "--memory"
			  : a->repeat > 1		 ? "--repeat"
			  : a->so.max_output_bytes	 ? "--max-output"
			  : a->so.probe_cfg.no_subprocesses ? "--no-subprocesses"
							    : NULL;
	if (!bad)
		return 0;
	cli_error("%s does not go with -a: the whole machine is followed as it runs, nothing "
		  "is started under sonde",
		  bad);
	return -1;
}

static int bad_duration(const char *opt, const char *arg)
{
	cli_error("%s '%s' is not a duration (examples: 10, 2.5s, 500ms, 1m)", opt, arg);
	return CLI_USAGE;
}

/* A probe's option of the command line: refused by attach when it is run's
 * only, checked and applied by its probe, kept in cfg->given. 0, or -1 after
 * the one-line error. */
static int probe_option_take(const struct probe_option *o, const char *arg, int attach,
			     struct probe_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	if (attach && o->run_only)
		strbuf_addstr(&err, o->run_only);
	else if (cfg->ngiven == PROBE_GIVEN_MAX)
		strbuf_addf(&err, "--%s: more than %d probe options", o->name, PROBE_GIVEN_MAX);
	else if (o->parse && o->parse(arg, cfg, &err) && !err.len)
		strbuf_addf(&err, "--%s '%s' is not valid", o->name, arg ? arg : "");
	if (err.len) {
		cli_error("%s", err.buf);
		strbuf_release(&err);
		return -1;
	}
	cfg->given[cfg->ngiven++] = (struct probe_given){ o, arg };
	return 0;
}

int profile_args_parse(int argc, char **argv, int attach, void (*usage)(FILE *out),
		       struct profile_args *a)
{
	const char *cmd = attach ? "attach" : "run";
	int c;
	struct profile_getopt g;
	profile_options_build(&g);
	memset(a, 0, sizeof(*a));
	a->so.grace_ns = SESSION_GRACE_NS_DEFAULT;
	a->so.capture_output = !attach;
	a->so.probe_cfg.interval_ns = 100 * NS_PER_MS;
	a->so.probe_cfg.rate_hz = 99;
	a->so.probe_cfg.memory_interval_bytes = PROBE_MEMORY_INTERVAL_DEFAULT;
	a->python_mode = "cpu";
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
		const struct probe_option *po = profile_probe_option(&g, c);
		if (po) {
			if (probe_option_take(po, optarg, attach, &a->so.probe_cfg))
				return CLI_USAGE;
			continue;
		}
		switch (c) {
		case 'o': a->out_dir = optarg; break;
		case 'a':
			if (attach) {
				cli_error("-a (the whole machine) belongs to 'sonde run -a': attach "
					  "follows one process and what it starts");
				return CLI_USAGE;
			}
			a->so.probe_cfg.whole_machine = 1;
			break;
		case 'd':
			if (parse_duration_ns(optarg, &a->so.duration_ns))
				return bad_duration("-d", optarg);
			break;
		case OPT_GRACE:
			if (parse_duration_ns(optarg, &a->so.grace_ns))
				return bad_duration("--grace", optarg);
			break;
		case OPT_PID: {
			long pid;
			if (!attach || parse_long_range(optarg, 1, 1L << 22, &pid)) {
				cli_error(attach ? "--pid '%s' is not a process id"
						 : "--pid belongs to 'sonde attach' (got '%s')",
					  optarg);
				return CLI_USAGE;
			}
			a->pid = (pid_t)pid;
			break;
		}
		case OPT_MODE:
			if (strcmp(optarg, "wall") && strcmp(optarg, "cpu") && strcmp(optarg, "gil")) {
				cli_error("--mode '%s' is not one of wall, cpu, gil", optarg);
				return CLI_USAGE;
			}
			a->python_mode = optarg;
			break;
		case OPT_NO_SUBPROCESSES: a->so.probe_cfg.no_subprocesses = 1; break;
		case OPT_SHARE: a->share = 1; break;
		case OPT_MAX_OUTPUT: {
			int64_t bytes;
			if (attach || parse_size(optarg, &bytes)) {
				cli_error(attach ? "--max-output belongs to 'sonde run': an attached "
						   "process's output is not read (got '%s')"
						 : "--max-output '%s' is not a size (examples: 64m, 512k, "
						   "1g, 0)",
					  optarg);
				return CLI_USAGE;
			}
			a->so.max_output_bytes = bytes ? bytes : SESSION_OUTPUT_NONE;
			break;
		}
		case OPT_PHASE:
			if (cli_check_phase_pattern(optarg))
				return CLI_USAGE;
			a->phase_pattern = optarg;
			break;
		case OPT_REPEAT: {
			long n;
			if (attach || parse_long_range(optarg, 1, REPEAT_MAX, &n)) {
				cli_error(attach ? "--repeat belongs to 'sonde run': a process is "
						   "attached to once (got '%s')"
						 : "--repeat '%s' is not a whole number of runs from 1 "
						   "to 100",
					  optarg);
				return CLI_USAGE;
			}
			a->repeat = (int)n;
			break;
		}
		case OPT_FORCE: a->force = 1; break;
		case OPT_PROBES:
			if (check_probe_list(optarg))
				return CLI_USAGE;
			a->so.only_probes = optarg;
			break;
		case OPT_FOCUS:
			if (focus_parse(optarg, &a->focus))
				return CLI_USAGE;
			break;
		case OPT_FORMAT:
			if (check_format_list(optarg))
				return CLI_USAGE;
			a->formats = optarg;
			break;
		case OPT_JSON: a->json = 1; break;
		case OPT_LIVE:
			if (attach) {
				cli_bad_option(cmd, c, optopt, argv[optind - 1], g.longopts);
				return CLI_USAGE;
			}
			a->live = 1;
			break;
		case 'q': a->quiet = 1; break;
		case 'v': a->verbose++; break;
		case 'h': usage(stdout); return 0;
		case OPT_VERSION: printf("sonde %s\n", SONDE_VERSION); return 0;
		default:
			cli_bad_option(cmd, c, optopt, argv[optind - 1], g.longopts);
			return CLI_USAGE;
		}
	}
	log_set_level(a->verbose >= 2 ? LOG_DEBUG : a->verbose ? LOG_INFO : LOG_WARN);
	if (a->live && live_check(a))
		return CLI_USAGE;
	if (a->so.probe_cfg.whole_machine && whole_machine_check(a))
		return CLI_USAGE;
	if (focus_apply(a->focus, attach || a->so.probe_cfg.whole_machine, a->so.probe_cfg.rate_set,
			&a->so.probe_cfg, &a->so.only_probes,
			a->focus_probes, sizeof(a->focus_probes)))
		return CLI_USAGE;
	return -1;
}

/* Where and as what this run ran: the host, its boot (a reboot restarts the
 * monotonic clock), and the rank and job a launcher (torchrun, MPI, Slurm)
 * gave it, from the environment sonde and its target share. */
static void record_run_identity(struct recorder *rec)
{
	char host[256];
	if (!gethostname(host, sizeof(host))) {
		host[sizeof(host) - 1] = '\0';
		record_meta(rec, "host", host);
	}
	char boot_id[64];
	ssize_t n = file_read_small("/proc/sys/kernel/random/boot_id", boot_id, sizeof(boot_id));
	if (n > 0) {
		boot_id[strcspn(boot_id, "\n")] = '\0';
		record_meta(rec, "boot_id", boot_id);
	}
	static const struct {
		const char *key, *vars[5];
	} ids[] = {
		{ "rank", { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL } },
		{ "local_rank",
		  { "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
		    NULL } },
		{ "world_size", { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL } },
		{ "job_id",
		  { "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID" } },
	};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		for (size_t k = 0; k < 5 && ids[i].vars[k]; k++) {
			const char *v = getenv(ids[i].vars[k]);
			if (!v || !*v || strlen(v) > 256)
				continue;
			record_meta(rec, ids[i].key, v);
			break;
		}
	}
}

static void record_run_meta(struct recorder *rec, const char *command_line,
			    const struct session_options *so)
{
	record_meta(rec, "sonde_version", SONDE_VERSION);
	record_meta(rec, "command", command_line);
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
	record_run_identity(rec);
	/* --function's SPECs, each "kind<TAB>spec" a line: the report names one
	 * even when its probe could not run. */
	struct strbuf fns = STRBUF_INIT;
	for (const char *const *f = so->probe_cfg.functions; *f; f++)
		strbuf_addf(&fns, "%s\t%s\n",
			    fnspec_kind(*f, so->probe_cfg.argv) == FNSPEC_PYTHON ? "python" : "native",
			    *f);
	if (fns.len)
		record_meta(rec, "functions", fns.buf);
	strbuf_release(&fns);
}

/* The machine's hygiene facts (machine.h) under meta key, at the run's start
 * and end; the report compares the two. SONDE_MACHINE_ROOT (tests) reads
 * them from a directory of fixture files instead of / . */
static void record_machine(struct recorder *rec, const char *key)
{
	struct machine_reading m;
	machine_read(getenv("SONDE_MACHINE_ROOT"), &m);
	json_t *j = machine_to_json(&m);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (text)
		record_meta(rec, key, text);
	free(text);
	json_decref(j);
}

/* profile.db is made here, O_EXCL|O_NOFOLLOW with the run's mode, and SQLite
 * opens that file by its resolved path (it refuses links: SQLITE_OPEN_NOFOLLOW
 * in recorder_open), so nothing planted at the name is written through. */
static int create_recording(const char *dir, mode_t mode, struct strbuf *db, struct strbuf *err)
{
	int dirfd = safe_dir_open(dir);
	int fd = dirfd < 0 ? dirfd : safe_create_excl(dirfd, "profile.db", mode);
	if (dirfd >= 0)
		close(dirfd);
	if (fd < 0) {
		strbuf_addf(err, "cannot create %s/profile.db: %s", dir,
			    fd == -EEXIST ? "something is already there" : strerror(-fd));
		return -1;
	}
	close(fd);
	char real[PATH_MAX];
	if (!realpath(dir, real)) {
		strbuf_addf(err, "cannot resolve %s: %s", dir, strerror(errno));
		return -1;
	}
	strbuf_addf(db, "%s/profile.db", real);
	return 0;
}

int profile_execute(struct profile_args *a, const char *name, const char *command_line)
{
	struct strbuf err = STRBUF_INIT, dir = STRBUF_INIT, db = STRBUF_INIT;
	int ret = CLI_USAGE;
	mode_t mode = a->share ? SAFEFILE_MODE_SHARED : SAFEFILE_MODE_PRIVATE;
	if (rundir_prepare(a->out_dir, name, a->force, mode, &dir, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (!a->out_dir)
		rundir_link_latest(dir.buf);
	struct recorder *rec;
	if (create_recording(dir.buf, mode, &db, &err) || recorder_open(db.buf, &rec, &err)) {
		cli_error("%s", err.buf);
		ret = 1;
		goto out;
	}
	record_run_meta(rec, command_line, &a->so);
	record_machine(rec, "hygiene_start");
	manifest_changelog(rec); /* files sonde instrument changed here: Part B */
	record_meta_int(rec, "rate_hz", a->so.probe_cfg.rate_hz);
	record_meta(rec, "python_mode", a->python_mode);
	if (a->phase_pattern)
		record_meta(rec, "phase_pattern", a->phase_pattern);
	if (a->focus) {
		struct strbuf names = STRBUF_INIT;
		focus_names(a->focus, &names);
		record_meta(rec, "focus", names.buf);
		strbuf_release(&names);
	}
	struct session_result res;
	/* Updates after each phase, unless -q, --live (the view holds the
	 * terminal) or no line of the command is read. */
	struct interim *in = !a->quiet && !a->live &&
				     (a->so.capture_output || a->so.probe_cfg.log_path)
				 ? interim_new(rec, db.buf, a->phase_pattern)
				 : NULL;
	a->so.hooks = in ? interim_hooks(in) : NULL;
	/* The status line, on a terminal, unless -q or attached (the target's
	 * output does not pass through sonde then, so a line could not be
	 * kept apart from it). */
	struct progress *pr = !a->quiet && !a->live && a->so.capture_output
				  ? progress_new(rec, a->phase_pattern, a->so.hooks)
				  : NULL;
	if (pr)
		a->so.hooks = progress_hooks(pr);
	struct live *view = NULL;
	if (a->live) {
		struct strbuf title = STRBUF_INIT;
		strbuf_addf(&title, "sonde run: %s", name);
		view = live_new(rec, title.buf, LIVE_WINDOW_NS_DEFAULT, 0);
		strbuf_release(&title);
		a->so.hold_output = a->so.capture_output;
		a->so.hooks = live_hooks(view);
		live_enter(view);
	}
	/* From the session's end until the report is on disk, a signal does not
	 * lose the run (see sigguard.h). */
	sigguard_arm(dir.buf);
	int rc = session_run(&a->so, rec, &res, &err);
	live_free(view); /* the terminal as it was, before the summary */
	progress_free(pr);
	interim_free(in); /* before the recording closes: it notes what it printed */
	record_machine(rec, "hygiene_end");
	const char *failed = recorder_failed(rec);
	if (failed)
		cli_error("the recording is incomplete (%s); the report covers what was written",
			  failed);
	recorder_close(rec);
	if (rc) {
		cli_error("%s", err.buf);
		ret = rc > 0 ? rc : 1;
		/* Nothing was measured: leave no empty run directory behind. */
		for (size_t i = 0; rundir_artifacts[i]; i++) {
			strbuf_reset(&db);
			strbuf_addf(&db, "%s/%s", dir.buf, rundir_artifacts[i]);
			unlink(db.buf);
		}
		if (!a->out_dir)
			rmdir(dir.buf); /* sonde made it; a directory the user named stays */
		goto out;
	}
	if (cli_render_run_dir(dir.buf, a->quiet, NULL) && !a->quiet)
		cli_error("the run finished but its report could not be written completely");
	outputs_extra_write(a, dir.buf);
	ret = res.exit_code >= 0 ? res.exit_code : 0;
out:
	sigguard_disarm();
	strbuf_release(&err);
	strbuf_release(&dir);
	strbuf_release(&db);
	return ret;
}
