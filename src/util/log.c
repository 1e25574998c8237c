/* log: one line per message, prefixed by the module that speaks. */
#include "log.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum log_level log_level = LOG_WARN;
static volatile int log_clear_line; /* a status line may stand on stderr */

void log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level log_get_level(void)
{
	return log_level;
}

void log_set_clear_line(int on) { log_clear_line = on; }

void log_msg(enum log_level level, const char *domain, const char *fmt, ...)
{
	if (level > log_level)
		return;
	char line[2048];
	int off;
	if (!strcmp(domain, "sonde"))
		off = snprintf(line, sizeof(line), "sonde: ");
	else
		off = snprintf(line, sizeof(line), "sonde[%s]: ", domain);
	if (level == LOG_WARN)
		off += snprintf(line + off, sizeof(line) - (size_t)off, "warning: ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + off, sizeof(line) - (size_t)off, fmt, ap);
	va_end(ap);
	if (log_clear_line)
		fputs("\r\033[K", stderr);
	/* Messages quote outside text (process names, paths): escaped (\x1b). */
	utf8_print(stderr, line, 0);
	fputc('\n', stderr);
}
