/* session: the event loop that ties target, probes and recording together. */
#define LOG_DOMAIN "session"
#include "session.h"
#include "exits.h"
#include "../derive/derive.h"
#include "../probes/perf_layer.h"
#include "../record/recorder.h"
#include "../target/output.h"
#include "../target/procfs.h"
#include "../target/proctree.h"
#include "../target/spawn.h"
#include "../target/taskstats.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* After the launched process exits, how long to keep reading output that its
 * surviving children may still hold open. */
#define SESSION_DRAIN_NS (300 * NS_PER_MS)

struct session {
	const struct session_options *opt;
	struct recorder *rec;
	struct probe_ctx pctx;
	struct proctree tree;
	struct exits *exits; /* NULL without taskstats */
	struct probe probes[PROBES_MAX];
	size_t nprobes;
	struct probe_env env;
	struct spawn sp;
	struct output_stream out, errs;
	int sigfd;
	int64_t start_ns, leader_exit_ns, stop_sent_ns, next_scan_ns;
	int64_t launch_ns; /* the target let go (spawned) or attached: its wall starts */
	int leader_done, leader_status;
	int pidfd;	  /* attach: readable when the process exits; -1 otherwise */
	pid_t leader_pid; /* the launched or attached process */
	struct rusage_info total;
	struct session_result *res;
	int64_t output_cap_bytes, output_stored_bytes, output_capped_at_ns;
	uint64_t output_stored_lines, output_dropped_lines, output_dropped_bytes;
};

static int64_t rel_ns(const struct session *s, int64_t now_ns)
{
	return now_ns - s->start_ns;
}

static void note(struct session *s, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(struct session *s, const char *kind, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	record_note(s->rec, rel_ns(s, clock_mono_ns()), "session", kind, strbuf_str(&sb));
	log_info("%s", strbuf_str(&sb));
	strbuf_release(&sb);
}

/* The output table is bounded: once a line would pass the cap, nothing more is
 * stored (the output still reaches sonde's stdout/stderr unchanged, unless
 * hold_output keeps it from the terminal: then it is only counted). */
static void on_line(void *data, int stream, const char *line, size_t len, int truncated)
{
	struct session *s = data;
	int64_t cost = (int64_t)len + SESSION_LINE_COST_BYTES;
	if (s->output_capped_at_ns || s->output_stored_bytes + cost > s->output_cap_bytes) {
		if (!s->output_capped_at_ns)
			s->output_capped_at_ns = rel_ns(s, clock_mono_ns()) | 1;
		s->output_dropped_lines++;
		s->output_dropped_bytes += len + 1;
		return;
	}
	s->output_stored_bytes += cost;
	s->output_stored_lines++;
	int64_t t = rel_ns(s, clock_mono_ns());
	record_output_line(s->rec, t, s->leader_pid, stream, line, len, truncated);
	if (s->opt->hooks && s->opt->hooks->line)
		s->opt->hooks->line(s->opt->hooks->arg, t, stream, line, len);
}

static void pump(struct session *s, struct output_stream *os)
{
	const struct session_hooks *h = s->opt->hooks;
	if (h && h->output)
		h->output(h->arg);
	output_stream_pump(os, on_line, s);
	if (os->binary && !os->binary_at_ns)
		os->binary_at_ns = rel_ns(s, clock_mono_ns()) | 1;
}

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

/* What was not stored, in words for the report and in meta for machines. */
static void note_output(struct session *s)
{
	const struct output_stream *streams[] = { &s->out, &s->errs };
	uint64_t binary = 0;
	/* With a live view on the terminal, what is not stored is not shown either. */
	const char *went = s->opt->hold_output ? "counted only (the live view held the terminal)"
					       : "passed through and counted";
	for (size_t i = 0; i < 2; i++) {
		const struct output_stream *os = streams[i];
		binary += os->bytes_binary;
		if (os->binary)
			note(s, "warning",
			     "the target's %s turned binary at %.3f s (a NUL byte): its %.1f MiB "
			     "from then on were %s, not stored as lines",
			     os->stream == 2 ? "stderr" : "stdout", ns_to_s(os->binary_at_ns),
			     mib(os->bytes_binary), went);
	}
	if (s->output_capped_at_ns)
		note(s, "warning",
		     "output cap of %.1f MiB reached at %.3f s (--max-output): %llu later lines "
		     "(%.1f MiB) were %s, not stored in output.log",
		     mib((uint64_t)(s->output_cap_bytes > 0 ? s->output_cap_bytes : 0)),
		     ns_to_s(s->output_capped_at_ns), (unsigned long long)s->output_dropped_lines,
		     mib(s->output_dropped_bytes), went);
	record_meta_int(s->rec, "output_bytes", (int64_t)(s->out.bytes_total + s->errs.bytes_total));
	record_meta_int(s->rec, "output_binary_bytes", (int64_t)binary);
	record_meta_int(s->rec, "output_cap_bytes", s->output_cap_bytes > 0 ? s->output_cap_bytes : 0);
	record_meta_int(s->rec, "output_capped", s->output_capped_at_ns != 0);
	record_meta_int(s->rec, "output_lines_dropped", (int64_t)s->output_dropped_lines);
}

static int probe_selected(const struct session_options *opt, const struct probe_ops *ops)
{
	if (!opt->only_probes)
		return ops->enabled_by_default || (ops->wanted && ops->wanted(&opt->probe_cfg));
	size_t n = strlen(ops->name);
	for (const char *p = opt->only_probes; (p = strstr(p, ops->name)); p += n)
		if ((p == opt->only_probes || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static void probes_start(struct session *s)
{
	const struct probe_ops *order[PROBES_MAX];
	struct strbuf err = STRBUF_INIT;
	int n = probe_order(probe_table, order, &err);
	if (n < 0) { /* a table that waits on itself: a bug, said and run as listed */
		log_warn("%s", err.buf);
		for (n = 0; probe_table[n] && n < PROBES_MAX; n++)
			order[n] = probe_table[n];
	}
	strbuf_release(&err);
	for (int i = 0; i < n && s->nprobes < PROBES_MAX; i++) {
		const struct probe_ops *ops = order[i];
		struct strbuf why = STRBUF_INIT;
		if (!probe_selected(s->opt, ops)) {
			record_probe(s->rec, ops->name, "off", "not requested");
			continue;
		}
		struct probe *p = &s->probes[s->nprobes];
		memset(p, 0, sizeof(*p));
		p->ops = ops;
		p->next_poll_ns = INT64_MAX;
		if (ops->available(&s->pctx, &why) || ops->start(p, &s->pctx, &why)) {
			if (ops->quiet_when_unavailable && !s->opt->only_probes)
				log_info("%s probe off: %s", ops->name, strbuf_str(&why));
			else
				log_warn("%s probe off: %s", ops->name, strbuf_str(&why));
			record_probe(s->rec, ops->name, "unavailable", strbuf_str(&why));
			if (ops->free)
				ops->free(p);
		} else {
			p->running = 1;
			record_probe(s->rec, ops->name, "on", NULL);
			s->nprobes++;
		}
		strbuf_release(&why);
	}
}

/* A process's life on the run's clock: it starts when the kernel started it
 * (stat's start time; when sonde first saw it if unknown; 0 if before the run)
 * and ends at end_mono_ns (< 0: still running); never before it starts. */
static void proc_life(const struct session *s, const struct proc_entry *e, int64_t end_mono_ns,
		      struct process_info *pi)
{
	int64_t start = rel_ns(s, e->start_ns >= 0 ? e->start_ns : e->seen_ns);
	pi->start_ns = start > 0 ? start : 0;
	pi->end_ns = end_mono_ns < 0 ? -1 : rel_ns(s, end_mono_ns);
	if (end_mono_ns >= 0 && pi->end_ns < pi->start_ns)
		pi->end_ns = pi->start_ns;
}

/* 1 when cmd runs a shell or env: a wrapper that may exec the program. */
static int command_runs_shell(const char *cmd)
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh", "env" };
	size_t n = strcspn(cmd, " ");
	const char *base = cmd;
	for (const char *c = cmd; c < cmd + n; c++)
		if (*c == '/')
			base = c + 1;
	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (strlen(shells[i]) == (size_t)(cmd + n - base) &&
		    !strncmp(base, shells[i], (size_t)(cmd + n - base)))
			return 1;
	return 0;
}

/* The recording's key of pid's newest process (process_key.h): a parent, a
 * process reaped or exec'ing now. */
static pid_t key_of(struct session *s, pid_t pid)
{
	const struct proc_entry *e = proctree_find(&s->tree, pid);
	return e ? e->key : pid;
}

/* Reads e's command line into cmd (0 when read, not empty). The name it had
 * then is kept in e->comm, read first: an exec between the two readings
 * leaves the older name, and the exit record (on_process_exit) then calls the
 * command stale rather than keep one read before the exec. */
static int entry_read_command(struct proc_entry *e, char *cmd, size_t cap)
{
	struct procfs_stat st;
	int named = !procfs_read_stat(e->pid, 0, &st);
	if (procfs_read_cmdline(e->pid, cmd, cap) || !cmd[0])
		return -1;
	if (named)
		memcpy(e->comm, st.comm, sizeof(e->comm));
	return 0;
}

static void record_proc_entry(struct session *s, const struct proc_entry *e, int exit_code,
			      int sig)
{
	char cmd[1024];
	struct process_info pi = {
		.pid = e->key,
		.ppid = key_of(s, e->ppid),
		.command = NULL,
		.is_leader = e->key == s->leader_pid,
		.exit_code = exit_code,
		.signal = sig,
	};
	proc_life(s, e, e->gone_ns, &pi);
	struct proc_entry *me = proctree_find(&s->tree, e->pid);
	if (!pi.is_leader && me && !entry_read_command(me, cmd, sizeof(cmd))) {
		pi.command = cmd;
		me->runs_shell = command_runs_shell(cmd);
	}
	record_process(s->rec, &pi);
}

static void on_added(void *data, const struct proc_entry *e)
{
	struct session *s = data;
	record_proc_entry(s, e, -1, 0);
	for (size_t i = 0; i < s->nprobes; i++)
		if (s->probes[i].ops->process_added)
			s->probes[i].ops->process_added(&s->probes[i], &s->pctx, e->pid);
}

static void on_gone(void *data, const struct proc_entry *e)
{
	struct session *s = data;
	struct process_info pi = {
		.pid = e->key, .ppid = key_of(s, e->ppid), .is_leader = 0, .exit_code = -1
	};
	proc_life(s, e, e->gone_ns, &pi);
	record_process(s->rec, &pi);
}

/* A whole process of the tree exited: the kernel's record gives its status even
 * when sonde is not its parent, and its life when sonde never saw it alive. */
static void on_process_exit(void *data, const struct task_exit *e, int found_by_exit)
{
	struct session *s = data;
	if (e->pid == s->leader_pid && !s->opt->attach_pid)
		return; /* sonde reaps the launched process itself */
	int status = e->exit_code;
	struct proc_entry *pe = proctree_find_exited(&s->tree, e->pid, e->elapsed_ns, clock_mono_ns());
	/* The kernel's own times: its start (stat) plus the life the exit record
	 * measured. A process never seen alive (found_by_exit, or seen without a
	 * start time) ends when its record arrived, which it lived before. */
	int64_t exit_mono;
	if (pe && pe->start_ns >= 0 && !found_by_exit) {
		exit_mono = pe->start_ns + e->elapsed_ns;
	} else {
		exit_mono = pe && pe->gone_ns >= 0 ? pe->gone_ns : clock_mono_ns();
		if (pe)
			pe->start_ns = exit_mono - e->elapsed_ns;
	}
	if (pe)
		pe->gone_ns = exit_mono;
	char name[40];
	snprintf(name, sizeof(name), "[%s]", e->comm); /* a name, not a command line */
	struct process_info pi = {
		.pid = pe ? pe->key : e->pid,
		.ppid = key_of(s, e->ppid),
		.command = name,
		.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
		/* Seen alive under another name: it exec'd after its command was read
		 * (a fresh child of sh), and died before it was read again. */
		.command_stale = pe && strncmp(pe->comm, e->comm, 15) != 0,
	};
	if (pe) {
		proc_life(s, pe, exit_mono, &pi);
	} else {
		struct proc_entry unknown = { .start_ns = exit_mono - e->elapsed_ns };
		proc_life(s, &unknown, exit_mono, &pi);
	}
	record_process(s->rec, &pi);
}

/* A process that ran a shell exec'd since the last scan (a wrapper, a shell
 * script or a pyenv shim, handing over): its new command line is recorded,
 * at the scan that saw it (one interval late at most). Only the launched
 * process and shells are watched: one small read each a scan. */
static void scan_execs(struct session *s, int64_t now_ns)
{
	char cmd[1024];
	for (size_t i = 0; i < s->tree.n; i++) {
		struct proc_entry *e = &s->tree.v[i];
		uint64_t id;
		if (e->gone_ns >= 0 || (e->pid != s->leader_pid && !e->runs_shell) ||
		    (e->pid == s->leader_pid && s->leader_done) ||
		    procfs_read_exec_id(e->pid, &id) || id == e->exec_id)
			continue;
		int first = !e->exec_id;
		e->exec_id = id;
		if (entry_read_command(e, cmd, sizeof(cmd)))
			continue;
		e->runs_shell = command_runs_shell(cmd);
		if (e->pid == s->leader_pid || !first)
			record_exec(s->rec, rel_ns(s, now_ns), e->key, cmd);
		if (e->pid != s->leader_pid && !first) {
			struct process_info pi = { .pid = e->key, .ppid = key_of(s, e->ppid), .command = cmd,
						   .exit_code = -1, .command_stale = 1 };
			proc_life(s, e, -1, &pi);
			record_process(s->rec, &pi);
		}
	}
}

static void scan_tree(struct session *s, int64_t now_ns)
{
	scan_execs(s, now_ns);
	proctree_scan(&s->tree, now_ns, on_added, on_gone, s);
	if (s->exits)
		exits_drain(s->exits, now_ns, on_process_exit, s);
	/* A fresh child may not have exec'd at first sight: read its command again. */
	for (size_t i = 0; i < s->tree.n; i++) {
		const struct proc_entry *e = &s->tree.v[i];
		if (e->gone_ns < 0 && now_ns - e->seen_ns < 2 * NS_PER_S && e->pid != s->leader_pid)
			record_proc_entry(s, e, -1, 0);
	}
	s->next_scan_ns = now_ns + s->opt->probe_cfg.interval_ns;
}

static void add_rusage(struct rusage_info *total, const struct rusage_info *ru)
{
	total->user_s += ru->user_s;
	total->sys_s += ru->sys_s;
	if (ru->maxrss_bytes > total->maxrss_bytes)
		total->maxrss_bytes = ru->maxrss_bytes;
	total->minflt += ru->minflt;
	total->majflt += ru->majflt;
	total->nvcsw += ru->nvcsw;
	total->nivcsw += ru->nivcsw;
	total->inblock += ru->inblock;
	total->oublock += ru->oublock;
}

static void reap_children(struct session *s)
{
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			return;
		pid_t pid = si.si_pid;
		/* Still a zombie: its /proc files hold its final totals. */
		for (size_t i = 0; i < s->nprobes; i++)
			if (s->probes[i].ops->process_exiting)
				s->probes[i].ops->process_exiting(&s->probes[i], &s->pctx, pid);
		int status = 0;
		struct rusage ru;
		if (wait4(pid, &status, WNOHANG, &ru) <= 0)
			return;
		int64_t now = clock_mono_ns();
		struct rusage_info ri = {
			.pid = key_of(s, pid),
			.user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
			.sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
			.maxrss_bytes = (int64_t)ru.ru_maxrss * 1024,
			.minflt = ru.ru_minflt,
			.majflt = ru.ru_majflt,
			.nvcsw = ru.ru_nvcsw,
			.nivcsw = ru.ru_nivcsw,
			.inblock = ru.ru_inblock,
			.oublock = ru.ru_oublock,
		};
		record_rusage(s->rec, &ri);
		add_rusage(&s->total, &ri);
		struct proc_entry *e = proctree_find(&s->tree, pid);
		if (!e)
			e = proctree_add(&s->tree, pid, getpid(), now);
		if (e) {
			if (e->gone_ns < 0)
				e->gone_ns = now;
			record_proc_entry(s, e, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
					  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		}
		if (pid == s->leader_pid) {
			s->leader_done = 1;
			s->leader_status = status;
			s->leader_exit_ns = now;
		}
	}
}

/* Attach mode: the session ends without the target (detach, or it exited). */
static void end_session(struct session *s, int64_t now)
{
	s->leader_done = 1;
	s->leader_exit_ns = now;
}

static void handle_signal(struct session *s, int sig)
{
	if (sig == SIGCHLD) {
		reap_children(s);
		return;
	}
	if (s->leader_done)
		return;
	if (s->opt->attach_pid > 0) {
		s->res->interrupted = 1;
		note(s, "event", "sonde received %s at %.3f s: detached, the process keeps running",
		     strsignal(sig), ns_to_s(rel_ns(s, clock_mono_ns())));
		end_session(s, clock_mono_ns());
		return;
	}
	if (s->res->interrupted) {
		note(s, "event", "second %s: sending SIGKILL to the target", strsignal(sig));
		spawn_signal(&s->sp, SIGKILL);
		s->res->escalated = 1;
		return;
	}
	s->res->interrupted = 1;
	note(s, "event", "sonde received %s at %.3f s; forwarded to the target", strsignal(sig),
	     ns_to_s(rel_ns(s, clock_mono_ns())));
	spawn_signal(&s->sp, sig);
}

static void check_deadlines(struct session *s, int64_t now)
{
	const struct session_options *opt = s->opt;
	if (s->leader_done)
		return;
	if (opt->attach_pid > 0) {
		if (s->pidfd < 0 && kill(opt->attach_pid, 0) < 0 && errno == ESRCH) {
			s->res->target_exited = 1;
			note(s, "event", "the attached process exited (seen at %.3f s)",
			     ns_to_s(rel_ns(s, now)));
			end_session(s, now);
			return;
		}
		if (opt->duration_ns && now - s->launch_ns >= opt->duration_ns) {
			s->res->stopped_by_duration = 1;
			note(s, "event", "duration of %.3f s reached: detached, the process keeps "
					 "running", ns_to_s(opt->duration_ns));
			end_session(s, now);
		}
		return;
	}
	if (opt->duration_ns && !s->stop_sent_ns && now - s->launch_ns >= opt->duration_ns) {
		s->stop_sent_ns = now;
		s->res->stopped_by_duration = 1;
		note(s, "event", "duration of %.3f s reached: sent SIGTERM to the target",
		     ns_to_s(opt->duration_ns));
		spawn_signal(&s->sp, SIGTERM);
	}
	if (s->stop_sent_ns && !s->res->escalated && now - s->stop_sent_ns >= opt->grace_ns) {
		s->res->escalated = 1;
		note(s, "event",
		     "the target was still running %.1f s after SIGTERM: sent SIGKILL",
		     ns_to_s(opt->grace_ns));
		spawn_signal(&s->sp, SIGKILL);
	}
}

static int64_t next_deadline(struct session *s)
{
	int64_t d = s->next_scan_ns;
	for (size_t i = 0; i < s->nprobes; i++)
		if (s->probes[i].next_poll_ns < d)
			d = s->probes[i].next_poll_ns;
	if (s->opt->duration_ns && !s->stop_sent_ns)
		d = d < s->launch_ns + s->opt->duration_ns ? d : s->launch_ns + s->opt->duration_ns;
	if (s->stop_sent_ns && !s->res->escalated)
		d = d < s->stop_sent_ns + s->opt->grace_ns ? d : s->stop_sent_ns + s->opt->grace_ns;
	if (s->leader_done)
		d = d < s->leader_exit_ns + SESSION_DRAIN_NS ? d : s->leader_exit_ns + SESSION_DRAIN_NS;
	return d;
}

static void note_survivors(struct session *s, int64_t now)
{
	size_t n = 0;
	struct strbuf list = STRBUF_INIT;
	for (size_t i = 0; i < s->tree.n; i++) {
		const struct proc_entry *e = &s->tree.v[i];
		if (e->gone_ns >= 0 || e->pid == s->leader_pid)
			continue;
		if (n++ < 8)
			strbuf_addf(&list, "%s%d (%s)", n > 1 ? ", " : "", (int)e->pid, e->comm);
	}
	if (n)
		note(s, "daemonised",
		     "%zu process%s of the target outlived the launched process and %s left "
		     "running: %s%s; sonde followed %s for %.3f s, until the launched process "
		     "exited",
		     n, n == 1 ? "" : "es", n == 1 ? "was" : "were", list.buf, n > 8 ? ", ..." : "",
		     n == 1 ? "it" : "them", ns_to_s(rel_ns(s, now)));
	strbuf_release(&list);
}

static void set_nonblock(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void record_leader(struct session *s, const char *command, pid_t ppid)
{
	struct process_info pi = { .pid = s->leader_pid, .ppid = ppid, .start_ns = 0, .end_ns = -1,
				   .command = command, .is_leader = 1, .exit_code = -1 };
	record_process(s->rec, &pi);
	record_meta_int(s->rec, "leader_pid", s->leader_pid);
}

/* Spawn at the gate, start the probes (they see the pid before exec), release. */
static int start_spawned(struct session *s, struct strbuf *err)
{
	const struct session_options *opt = s->opt;
	/* Probes start first: they may set the command's environment (agents). */
	probes_start(s);
	int capture = opt->capture_output && opt->hold_output ? SPAWN_HOLD_TERMINAL
							      : opt->capture_output;
	if (spawn_start(&s->sp, opt->argv, (const char *const *)s->env.v, capture,
			err))
		return -1;
	s->leader_pid = s->sp.pid;
	output_stream_init(&s->out, s->sp.stdout_fd, opt->hold_output ? -1 : STDOUT_FILENO, 1);
	output_stream_init(&s->errs, s->sp.stderr_fd, opt->hold_output ? -1 : STDERR_FILENO, 2);
	s->sp.stdout_fd = s->sp.stderr_fd = -1; /* the streams own them now */
	set_nonblock(s->out.fd);
	set_nonblock(s->errs.fd);
	struct proc_entry *leader = proctree_add(&s->tree, s->leader_pid, getpid(), s->start_ns);
	struct strbuf cmd = STRBUF_INIT;
	for (char *const *a = opt->argv; *a; a++)
		strbuf_addf(&cmd, "%s%s", a == opt->argv ? "" : " ", *a);
	record_leader(s, cmd.buf, getpid());
	strbuf_release(&cmd);
	/* Python reads it as set when not empty: every write to sys.stdout and
	 * sys.stderr is then a system call (the hotspots' unbuffered writes).
	 * The command gets sonde's environment with the probes' on top. */
	const char *unbuffered = getenv("PYTHONUNBUFFERED");
	for (char **e = s->env.v; e && *e; e++)
		if (!strncmp(*e, "PYTHONUNBUFFERED=", 17))
			unbuffered = *e + 17;
	if (unbuffered && *unbuffered)
		record_meta_int(s->rec, "env_pythonunbuffered", 1);
	if (leader)
		on_added(s, leader);
	int rc = spawn_release(&s->sp, err);
	s->launch_ns = clock_mono_ns(); /* the probes' start-up is not the target's time */
	if (rc) {
		spawn_finish(&s->sp);
		while (waitpid(s->sp.pid, NULL, 0) < 0 && errno == EINTR)
			;
		return rc;
	}
	return 0;
}

/* Follow a running process: never signalled, never waited for. */
static int start_attached(struct session *s, struct strbuf *err)
{
	pid_t pid = s->opt->attach_pid;
	struct procfs_stat st;
	int rc = procfs_read_stat(pid, 0, &st);
	if (rc) {
		strbuf_addf(err, "no process %d to attach to%s", (int)pid,
			    rc == -ENOENT ? "" : " (/proc cannot be read)");
		return -1;
	}
	if (st.state == 'Z') {
		strbuf_addf(err, "process %d has already exited (zombie)", (int)pid);
		return -1;
	}
	if (kill(pid, 0) < 0 && errno == EPERM) {
		strbuf_addf(err, "not permitted to follow process %d: ", (int)pid);
		procfs_explain_denied(pid, err);
		return -1;
	}
	s->leader_pid = pid;
	s->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	record_meta_int(s->rec, "attached", 1);
	if (s->opt->probe_cfg.whole_machine)
		record_meta_int(s->rec, "whole_machine", 1);
	probes_start(s);
	char cmd[1024];
	if (procfs_read_cmdline(pid, cmd, sizeof(cmd)))
		snprintf(cmd, sizeof(cmd), "[%s]", st.comm);
	record_leader(s, cmd, st.ppid);
	struct proc_entry *leader = proctree_add(&s->tree, pid, st.ppid, s->start_ns);
	if (leader)
		on_added(s, leader);
	/* -d and the wall time count from here, the probes started and their
	 * first readings taken: start-up is not the time asked for (it can take
	 * seconds on a loaded machine). */
	s->launch_ns = clock_mono_ns();
	return 0;
}

static int session_loop(struct session *s)
{
	for (;;) {
		int64_t now = clock_mono_ns();
		if (s->leader_done && (now - s->leader_exit_ns >= SESSION_DRAIN_NS ||
				       (s->out.fd < 0 && s->errs.fd < 0)))
			break;
		struct pollfd pfd[4];
		int n = 0;
		pfd[n++] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		if (s->pidfd >= 0 && !s->leader_done)
			pfd[n++] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
		if (s->out.fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = s->out.fd, .events = POLLIN };
		if (s->errs.fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = s->errs.fd, .events = POLLIN };
		/* Nanosecond timeout: stack samplers run at up to kHz rates. */
		int64_t wait_ns = next_deadline(s) - now;
		wait_ns = wait_ns < 0 ? 0 : wait_ns > NS_PER_S ? NS_PER_S : wait_ns;
		struct timespec timeout = { (time_t)(wait_ns / NS_PER_S), (long)(wait_ns % NS_PER_S) };
		if (ppoll(pfd, (nfds_t)n, &timeout, NULL) < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < n; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (pfd[i].fd == s->sigfd) {
				struct signalfd_siginfo si;
				while (read(s->sigfd, &si, sizeof(si)) == sizeof(si))
					handle_signal(s, (int)si.ssi_signo);
			} else if (pfd[i].fd == s->pidfd) {
				s->res->target_exited = 1;
				note(s, "event", "the attached process exited at %.3f s",
				     ns_to_s(rel_ns(s, clock_mono_ns())));
				end_session(s, clock_mono_ns());
			} else if (pfd[i].fd == s->out.fd) {
				pump(s, &s->out);
			} else if (pfd[i].fd == s->errs.fd) {
				pump(s, &s->errs);
			}
		}
		now = clock_mono_ns();
		if (now >= s->next_scan_ns)
			scan_tree(s, now);
		for (size_t i = 0; i < s->nprobes; i++)
			if (s->probes[i].ops->poll && now >= s->probes[i].next_poll_ns)
				s->probes[i].ops->poll(&s->probes[i], &s->pctx, now);
		check_deadlines(s, now);
		recorder_tick(s->rec, 0);
		const struct session_hooks *h = s->opt->hooks;
		if (h && h->turn && s->out.at_line_start && s->errs.at_line_start)
			h->turn(h->arg, rel_ns(s, now), 0);
	}
	if (s->opt->hooks && s->opt->hooks->turn)
		s->opt->hooks->turn(s->opt->hooks->arg, rel_ns(s, clock_mono_ns()), 1);
	return 0;
}

int session_run(const struct session_options *opt, struct recorder *rec,
		struct session_result *res, struct strbuf *err)
{
	struct session s;
	memset(&s, 0, sizeof(s));
	memset(res, 0, sizeof(*res));
	s.opt = opt;
	s.rec = rec;
	s.res = res;
	s.sp = (struct spawn)SPAWN_INIT;
	s.sigfd = -1;
	s.pidfd = -1;
	s.out.fd = s.errs.fd = -1;
	s.out.at_line_start = s.errs.at_line_start = 1; /* attached: nothing passes through */
	s.output_cap_bytes = opt->max_output_bytes == SESSION_OUTPUT_NONE ? 0
			     : opt->max_output_bytes > 0	      ? opt->max_output_bytes
								      : SESSION_MAX_OUTPUT_DEFAULT;
	int ret = -1;

	sigset_t mask, old;
	sigemptyset(&mask);
	int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGTTOU, SIGTTIN };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&mask, sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, &old);
	signal(SIGPIPE, SIG_IGN);
	s.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s.sigfd < 0) {
		strbuf_addf(err, "cannot watch signals: %s", strerror(errno));
		goto out;
	}
	/* Orphans of the target become our children: a daemon is still followed and reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	s.start_ns = clock_mono_ns();
	s.launch_ns = s.start_ns;
	/* The run's place in wall-clock time: t_ns 0 is start_unix_ns. */
	int64_t anchor_mono_ns, anchor_real_ns;
	clock_anchor(&anchor_mono_ns, &anchor_real_ns);
	record_meta_int(rec, "start_mono_ns", s.start_ns);
	record_meta_int(rec, "start_unix_ns", anchor_real_ns - (anchor_mono_ns - s.start_ns));
	/* The local time zone's offset then: logs stamp local time. */
	time_t now_s = (time_t)(anchor_real_ns / 1000000000);
	struct tm local;
	if (localtime_r(&now_s, &local))
		record_meta_int(rec, "utc_offset_s", (int64_t)local.tm_gmtoff);
	if (opt->attach_pid > 0) {
		proctree_init(&s.tree, opt->attach_pid, 1);
		s.tree.skip = getpid(); /* attached to an ancestor of sonde (init, -a) */
	} else
		proctree_init(&s.tree, getpid(), 0);
	s.tree.no_descendants = opt->probe_cfg.no_subprocesses;
	struct strbuf why = STRBUF_INIT;
	if (exits_open(&s.exits, rec, &s.tree, s.start_ns, &why)) {
		log_info("exact exit figures unavailable: %s", why.buf);
		record_probe(rec, "taskstats", "unavailable", why.buf);
	} else {
		record_probe(rec, "taskstats", "on", NULL);
	}
	strbuf_release(&why);
	s.pctx = (struct probe_ctx){ .rec = rec, .cfg = &opt->probe_cfg, .tree = &s.tree,
				     .start_ns = s.start_ns,
				     .env = opt->attach_pid > 0 ? NULL : &s.env,
				     .perf = perf_layer_new() };
	if (opt->hooks) { /* lines a probe reads (--log) reach the hooks too */
		s.pctx.line_seen = opt->hooks->line;
		s.pctx.line_arg = opt->hooks->arg;
	}
	for (const char *const *e = opt->extra_env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (eq) {
			char *name = xstrdup(*e);
			name[eq - *e] = '\0';
			probe_env_set(&s.pctx, name, eq + 1);
			free(name);
		}
	}
	int rc = opt->attach_pid > 0 ? start_attached(&s, err) : start_spawned(&s, err);
	if (rc) {
		ret = rc;
		goto out_probes;
	}
	s.next_scan_ns = clock_mono_ns();
	if (session_loop(&s)) {
		strbuf_addf(err, "event loop failed: %s", strerror(errno));
		goto out_probes;
	}
	int64_t end = clock_mono_ns();
	scan_tree(&s, end);
	note_survivors(&s, end);
	res->wall_ns = s.leader_exit_ns - s.launch_ns;
	record_meta_int(rec, "wall_ns", res->wall_ns);
	record_meta_int(rec, "launch_ns", s.launch_ns - s.start_ns);
	if (opt->attach_pid > 0) {
		res->exit_code = -1;
		record_meta_int(rec, "target_exited", res->target_exited);
	} else {
		res->exit_code = spawn_exit_code(s.leader_status);
		record_meta_int(rec, "exit_code", res->exit_code);
	}
	record_meta_int(rec, "interrupted", res->interrupted);
	record_meta_int(rec, "stopped_by_duration", res->stopped_by_duration);
	record_meta_int(rec, "escalated", res->escalated);
	record_meta_int(rec, "output_lines", (int64_t)s.output_stored_lines);
	record_meta_int(rec, "output_lines_truncated",
			(int64_t)(s.out.lines_truncated + s.errs.lines_truncated));
	record_meta_int(rec, "processes_dropped", (int64_t)s.tree.dropped);
	if (opt->capture_output)
		note_output(&s);
	if (s.exits && exits_lost(s.exits))
		note(&s, "warning", "the kernel dropped some exit records (taskstats overflow): "
				    "figures of some short-lived processes are missing");
	if (opt->attach_pid <= 0) {
		s.total.pid = 0;
		record_rusage(rec, &s.total); /* attached: sonde reaps nothing of its own */
	}
	ret = 0;
out_probes:
	for (size_t i = 0; i < s.nprobes; i++) {
		s.probes[i].ops->stop(&s.probes[i], &s.pctx);
		if (s.probes[i].ops->free)
			s.probes[i].ops->free(&s.probes[i]);
	}
	/* Every probe has written all it measured: the joins of several. */
	derive_run(rec, derive_table);
	recorder_tick(rec, 1);
out:
	perf_layer_free(s.pctx.perf);
	probe_env_release(&s.env);
	spawn_finish(&s.sp);
	output_stream_release(&s.out);
	output_stream_release(&s.errs);
	proctree_release(&s.tree);
	exits_close(s.exits);
	if (s.pidfd >= 0)
		close(s.pidfd);
	if (s.sigfd >= 0)
		close(s.sigfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}
