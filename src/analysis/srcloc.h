/* srcloc: where in the program's own source a line of its log was written,
 * what encloses that place, and what fans out there.
 *
 * The source tree is the folders of the program's own files the stack
 * samples name (Python files outside the standard library and site-packages;
 * C and C++ files with their DWARF line info) that exist here: their .py, .c,
 * .cc and .cpp files, at most SRCLOC_FILES_MAX of at most SRCLOC_FILE_MAX
 * bytes. A source line matches a log line when the literal parts of one of
 * its string literals (split at %s, %d, %.2f, {} and {name} format fields)
 * appear in the log line in order; the match with the most literal
 * characters (at least SRCLOC_LITERAL_MIN) wins. The enclosing function and
 * class follow Python's indentation (def / async def / class with less
 * indentation above), or for C the last line at column 0 that opens a
 * function. In that function's body: the fan-out constructs (asyncio.gather,
 * create_task, as_completed, TaskGroup, asyncio.wait, executors' submit and
 * map, Pool.map) and whether a Semaphore or a max_workers= / limit= bounds
 * them. */
#ifndef SONDE_SRCLOC_H
#define SONDE_SRCLOC_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>

#define SRCLOC_FILES_MAX 200
#define SRCLOC_FILE_MAX (2 * 1024 * 1024)
#define SRCLOC_LITERAL_MIN 6

struct srcloc_index;

/* The program's source files named by the recording; NULL when it names none
 * that exist here. */
struct srcloc_index *srcloc_index_new(sqlite3 *db);
/* An index of one file whose text is given (len bytes, any bytes): the
 * testable heart of the above. NULL when len is 0 or over SRCLOC_FILE_MAX. */
struct srcloc_index *srcloc_index_of_text(const char *path, const char *text, size_t len);
void srcloc_index_free(struct srcloc_index *ix);

/* The place that wrote line (len bytes), as a JSON object {file, line,
 * function, class, fan_out: [{construct, line}], bounded (true, false, or
 * null without fan-out)}; NULL when no source line matches. */
json_t *srcloc_find(const struct srcloc_index *ix, const char *line, size_t len);

#endif
