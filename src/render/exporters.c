/* exporters: the table of formats `sonde export` writes, chosen by name. */
#include "render.h"

#include <string.h>

#define EXPORTER(name) extern const struct exporter export_##name;
#include "exporter_list.h"
#undef EXPORTER

const struct exporter *const export_table[] = {
#define EXPORTER(name) &export_##name,
#include "exporter_list.h"
#undef EXPORTER
	NULL,
};

const struct exporter *exporter_find(const char *name)
{
	for (size_t i = 0; export_table[i]; i++) {
		const struct exporter *e = export_table[i];
		if (!strcmp(e->name, name) || (e->alias && !strcmp(e->alias, name)))
			return e;
	}
	return NULL;
}
