/* renderers: the table of output files and the loop that writes them. */
#include "render.h"
#include "../util/safefile.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RENDERER(name) extern const struct renderer render_##name;
#include "renderer_list.h"
#undef RENDERER

/* In the registry's order: report.json last, it lists the files the others wrote. */
const struct renderer *const render_table[] = {
#define RENDERER(name) &render_##name,
#include "renderer_list.h"
#undef RENDERER
	NULL,
};

const struct renderer *renderer_find(const char *name)
{
	for (size_t i = 0; render_table[i]; i++)
		if (!strcmp(render_table[i]->name, name))
			return render_table[i];
	return NULL;
}

/* Through a fresh temporary with a random name (O_EXCL, O_NOFOLLOW) renamed
 * over the final name: nothing planted in the directory is written through. */
static int render_one(const struct render_ctx *ctx, int dirfd, const struct renderer *r,
		      struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT, tmp = STRBUF_INIT, why = STRBUF_INIT;
	int ret = -1;
	strbuf_addf(&path, "%s/%s", ctx->dir, r->file);
	int fd = safe_tmp_create(dirfd, r->file,
				 ctx->file_mode ? ctx->file_mode : SAFEFILE_MODE_PRIVATE, &tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		strbuf_addf(err, "%s: %s", path.buf, strerror(fd < 0 ? -fd : errno));
		if (fd >= 0) {
			close(fd);
			unlinkat(dirfd, tmp.buf, 0);
		}
		goto out;
	}
	int rc = r->render(ctx, f, &why);
	int werr = ferror(f);
	errno = 0;
	if (fclose(f) || werr) {
		strbuf_addf(err, "%s: write failed (%s)", path.buf, strerror(errno ? errno : EIO));
		unlinkat(dirfd, tmp.buf, 0);
		goto out;
	}
	if (rc) {
		unlinkat(dirfd, tmp.buf, 0);
		if (rc < 0)
			strbuf_addf(err, "%s: %s", path.buf, why.buf);
		ret = rc < 0 ? -1 : 1;
		goto out;
	}
	int cerr = safe_tmp_commit(dirfd, tmp.buf, r->file);
	if (cerr) {
		strbuf_addf(err, "%s: %s", path.buf, strerror(-cerr));
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&path);
	strbuf_release(&tmp);
	strbuf_release(&why);
	return ret;
}

/* Is name a temporary of ours for file (".FILE." and 8 letters or digits)? */
static int is_stale_tmp(const char *name, const char *file)
{
	size_t n = strlen(file);
	if (name[0] != '.' || strncmp(name + 1, file, n) || name[n + 1] != '.')
		return 0;
	const char *p = name + n + 2;
	size_t k = 0;
	while (p[k] && isalnum((unsigned char)p[k]))
		k++;
	return k == 8 && !p[k];
}

/* Temporaries left by a sonde aborted while it wrote the report (removed, the
 * link itself when one is there: never followed). */
static void remove_stale_tmps(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		for (size_t i = 0; render_table[i]; i++)
			if (is_stale_tmp(de->d_name, render_table[i]->file))
				unlinkat(dirfd, de->d_name, 0);
	closedir(d);
}

int render_all(const struct render_ctx *ctx, struct strbuf *err)
{
	int dirfd = safe_dir_open(ctx->dir);
	if (dirfd < 0) {
		strbuf_addf(err, "%s: %s", ctx->dir, strerror(-dirfd));
		return 1;
	}
	remove_stale_tmps(dirfd);
	int failures = 0;
	json_t *artifacts = json_array();
	if (!ctx->sliced)
		json_array_append_new(artifacts, json_string("profile.db"));
	json_object_set(ctx->report, "artifacts", artifacts);
	for (size_t i = 0; render_table[i]; i++) {
		const struct renderer *r = render_table[i];
		if (r == &render_json)
			json_array_append_new(artifacts, json_string(r->file));
		struct strbuf one = STRBUF_INIT;
		int rc = render_one(ctx, dirfd, r, &one);
		if (rc < 0) {
			failures++;
			strbuf_addf(err, "%s%s", err->len ? "\n" : "", one.buf);
			if (r == &render_json)
				json_array_remove(artifacts, json_array_size(artifacts) - 1);
		} else if (rc == 0 && r != &render_json) {
			json_array_append_new(artifacts, json_string(r->file));
		}
		strbuf_release(&one);
	}
	json_decref(artifacts);
	close(dirfd);
	return failures;
}

/* Thresholds are where the printed value would round up to 1024 (or 1000, or
 * 60): the next unit is used there, never "1024 B", "1000.0 ms" or "60 s". */
void fmt_bytes(char *buf, size_t cap, double b)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;
	while (u < 4 && b >= (u ? 1023.95 : 1023.5)) {
		b /= 1024;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

void fmt_seconds(char *buf, size_t cap, double s)
{
	if (s * 1e6 < 999.5) {
		snprintf(buf, cap, "%.0f µs", s * 1e6);
	} else if (s * 1e3 < 999.95) {
		snprintf(buf, cap, "%.1f ms", s * 1e3);
	} else if (s < 119.995) {
		snprintf(buf, cap, "%.2f s", s);
	} else {
		long long total = llround(s);
		snprintf(buf, cap, "%lld min %lld s", total / 60, total % 60);
	}
}
