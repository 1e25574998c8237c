/* progress: the status line of a run on a terminal (see progress.h). */
#include "progress.h"
#include "../analysis/phase_markers.h"
#include "../record/recorder.h"
#include "../render/render.h"
#include "../util/log.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct progress {
	struct session_hooks hooks;
	const struct session_hooks *inner;
	struct recorder *rec;
	struct phase_pattern pattern;
	int have_pattern;
	char phase[PHASE_NAME_MAX]; /* "" when none is open */
	int drawn;
	int64_t drawn_at_ns;
};

static void erase(struct progress *p)
{
	if (!p->drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->drawn = 0;
}

static size_t columns(void)
{
	struct winsize ws;
	size_t n = !ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col ? ws.ws_col : 80;
	return n > PROGRESS_COLUMNS_MAX ? PROGRESS_COLUMNS_MAX : n;
}

static void draw(struct progress *p, int64_t t_ns)
{
	struct recorder_live live;
	struct strbuf sb = STRBUF_INIT;
	char rss[32];
	recorder_live_read(p->rec, &live);
	strbuf_addf(&sb, "sonde: %.1f s, %lld samples", (double)t_ns / 1e9,
		    (long long)live.samples);
	if (live.rss_bytes > 0) {
		fmt_bytes(rss, sizeof(rss), (double)live.rss_bytes);
		strbuf_addf(&sb, ", RSS %s", rss);
	}
	/* One line: a wrapped status line could not be erased with \r. The
	 * text so far is ASCII; the phase's name is outside text, escaped. */
	size_t width = columns() - 1;
	if (*p->phase && sb.len + 16 < width) {
		strbuf_addstr(&sb, ", phase ");
		utf8_escape(p->phase, strlen(p->phase), width - sb.len, &sb);
	}
	if (sb.len > width) {
		sb.len = width;
		sb.buf[width] = '\0';
	}
	fputs("\r\033[K", stderr);
	fputs(sb.buf, stderr);
	fflush(stderr);
	strbuf_release(&sb);
	p->drawn = 1;
	p->drawn_at_ns = t_ns;
}

static void on_line(void *arg, int64_t t_ns, int stream, const char *line, size_t len)
{
	struct progress *p = arg;
	struct phase_marker m;
	if (phase_marker_parse(line, len, p->have_pattern ? &p->pattern : NULL, &m)) {
		if (m.event == PHASE_START || m.event == PHASE_MARK)
			memcpy(p->phase, m.name, sizeof(p->phase));
		else if (m.event == PHASE_END && !strcmp(m.name, p->phase))
			p->phase[0] = '\0';
	}
	if (p->inner && p->inner->line)
		p->inner->line(p->inner->arg, t_ns, stream, line, len);
}

static void on_output(void *arg)
{
	struct progress *p = arg;
	erase(p);
	if (p->inner && p->inner->output)
		p->inner->output(p->inner->arg);
}

static void on_turn(void *arg, int64_t t_ns, int last)
{
	struct progress *p = arg;
	if (p->inner && p->inner->turn) {
		/* The inner hook may print whole lines: not after the status text. */
		erase(p);
		p->inner->turn(p->inner->arg, t_ns, last);
	}
	if (last) {
		erase(p);
		return;
	}
	/* At most once a PROGRESS_EVERY_NS, however much the command prints:
	 * a line its output erased waits for the next. */
	if (!p->drawn_at_ns || t_ns - p->drawn_at_ns >= PROGRESS_EVERY_NS)
		draw(p, t_ns);
}

struct progress *progress_new(struct recorder *rec, const char *pattern,
			      const struct session_hooks *inner)
{
	if (!isatty(STDERR_FILENO))
		return NULL;
	struct progress *p = xcalloc(1, sizeof(*p));
	if (pattern && !phase_pattern_compile(&p->pattern, pattern, NULL))
		p->have_pattern = 1;
	p->rec = rec;
	p->inner = inner;
	p->hooks =
	    (struct session_hooks){.arg = p, .line = on_line, .turn = on_turn, .output = on_output};
	log_set_clear_line(1);
	return p;
}

const struct session_hooks *progress_hooks(struct progress *p) { return &p->hooks; }

void progress_free(struct progress *p)
{
	if (!p)
		return;
	erase(p);
	log_set_clear_line(0);
	if (p->have_pattern)
		phase_pattern_release(&p->pattern);
	free(p);
}
