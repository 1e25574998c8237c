/* path: the last part of a path, for names shown to people. */
#ifndef SONDE_PATH_H
#define SONDE_PATH_H

#include <string.h>

/* What follows the last '/' of path (path itself without one); NULL for NULL. */
static inline const char *path_base(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path;
}

#endif
