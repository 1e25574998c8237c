/* log: leveled messages on stderr, each with its module's prefix.
 * A module defines LOG_DOMAIN before including this header; messages then read
 * "sonde[proc]: ...". Warnings and errors always print; info with -v, debug with -vv. */
#ifndef SONDE_LOG_H
#define SONDE_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* On: each message first clears the terminal line it starts on, where a
 * status line (cli/progress.h) may stand. */
void log_set_clear_line(int on);
__attribute__((format(printf, 3, 4))) void log_msg(enum log_level level, const char *domain,
						   const char *fmt, ...);

#ifndef LOG_DOMAIN
#define LOG_DOMAIN "sonde"
#endif

#define log_error(...) log_msg(LOG_ERROR, LOG_DOMAIN, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, LOG_DOMAIN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, LOG_DOMAIN, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, LOG_DOMAIN, __VA_ARGS__)

#endif
