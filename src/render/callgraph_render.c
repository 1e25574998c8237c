/* callgraph renderers: callgraph.dot (Graphviz's DOT, the `dot` export) and
 * callgraph.svg (that graph laid out by Graphviz's `dot`, when installed:
 * `SONDE_DOT` names another program, as tests do). Both of the on-CPU
 * samples the flame graph counts. */
#include "callgraph.h"
#include "render.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DOT_DEADLINE_S 30 /* a layout that takes longer is given up */

/* The on-CPU graph of the run and its title; 1 when it has no samples. */
static int graph_load(const struct render_ctx *ctx, struct stack_set *ss, struct callgraph *g,
		      struct strbuf *title, struct strbuf *err)
{
	const char *source = "cpu";
	if (stack_set_load_mode(ctx->db, stack_mode_of(ctx->db), ss, &source, err) < 0)
		return -1;
	if (callgraph_build(ss, g)) {
		stack_set_release(ss);
		return 1;
	}
	strbuf_addf(title, "Call graph of the %s samples (%lld): total and self share per function",
		    source, (long long)ss->total_samples);
	return 0;
}

static int dot_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct stack_set ss;
	struct callgraph g;
	struct strbuf title = STRBUF_INIT;
	int rc = graph_load(ctx, &ss, &g, &title, err);
	if (!rc) {
		callgraph_dot_write(&g, title.buf, out);
		callgraph_release(&g);
		stack_set_release(&ss);
	}
	strbuf_release(&title);
	return rc;
}

/* Runs `dot -Tsvg` from in_fd to out_fd, within DOT_DEADLINE_S. 0, or -1
 * with why in err; 1 when no dot is installed (err says so too). */
static int dot_run(int in_fd, int out_fd, struct strbuf *err)
{
	const char *dot = getenv("SONDE_DOT");
	if (!dot || !*dot)
		dot = "dot";
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC)) {
		strbuf_addf(err, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		strbuf_addf(err, "fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (!pid) {
		int e = 0;
		if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0)
			e = errno;
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2);
		if (!e) {
			execlp(dot, dot, "-Tsvg", (char *)NULL);
			e = errno;
		}
		ssize_t w = write(pipefd[1], &e, sizeof(e)); /* exec failed: say why */
		(void)w;
		_exit(127);
	}
	close(pipefd[1]);
	int exec_errno = 0;
	ssize_t got = read(pipefd[0], &exec_errno, sizeof(exec_errno));
	close(pipefd[0]);
	int status = 0, waited = 0;
	for (int i = 0; i < DOT_DEADLINE_S * 20; i++) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR)) {
			waited = w == pid;
			break;
		}
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (!waited) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		strbuf_addf(err, "%s took over %d s to lay the graph out", dot, DOT_DEADLINE_S);
		return -1;
	}
	if (got == (ssize_t)sizeof(exec_errno) && exec_errno == ENOENT) {
		strbuf_addf(err,
			    "Graphviz's %s is not installed (apt-get install graphviz, or "
			    "'sonde export DIR --format dot' for the graph itself)",
			    dot);
		return 1;
	}
	if (got == (ssize_t)sizeof(exec_errno)) {
		strbuf_addf(err, "%s: %s", dot, strerror(exec_errno));
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		strbuf_addf(err, "%s failed (exit status %d)", dot,
			    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return -1;
	}
	return 0;
}

/* A fresh unlinked temporary file. */
static int scratch_fd(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/sonde-dot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

static int svg_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	int in_fd = scratch_fd(), out_fd = scratch_fd(), rc = -1;
	FILE *in = in_fd >= 0 ? fdopen(dup(in_fd), "w") : NULL;
	if (!in || out_fd < 0) {
		strbuf_addf(err, "a temporary file for Graphviz: %s", strerror(errno));
		if (in)
			fclose(in);
		goto out;
	}
	rc = dot_render(ctx, in, err);
	if (fclose(in) && !rc) {
		strbuf_addf(err, "a temporary file for Graphviz: %s", strerror(errno));
		rc = -1;
	}
	if (rc)
		goto out;
	lseek(in_fd, 0, SEEK_SET);
	/* Graphviz missing or failing costs the picture, not the report. */
	rc = dot_run(in_fd, out_fd, err) ? 1 : 0;
	if (rc)
		goto out;
	lseek(out_fd, 0, SEEK_SET);
	char buf[65536];
	ssize_t n;
	while ((n = read(out_fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, out);
	if (n < 0) {
		strbuf_addf(err, "reading Graphviz's output: %s", strerror(errno));
		rc = -1;
	}
out:
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0)
		close(out_fd);
	return rc;
}

const struct renderer render_callgraph_dot = {
    .name = "dot", .file = "callgraph.dot", .render = dot_render};
const struct renderer render_callgraph = {
    .name = "callgraph", .file = "callgraph.svg", .render = svg_render};

const struct exporter export_callgraph = {
	.name = "callgraph",
	.description = "call graph SVG (Graphviz's dot lays it out): functions with total and "
		       "self share, split by caller where their cost differs",
	.renderer = &render_callgraph,
};

const struct exporter export_dot = {
	.name = "dot",
	.description = "the call graph in Graphviz's DOT language, to lay out or edit",
	.renderer = &render_callgraph_dot,
};
