/* demangle: libstdc++'s demangler, looked up once (demangle.h). */
#include "demangle.h"
#include "strbuf.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static demangle_fn demangler_find(void)
{
	static int tried;
	static demangle_fn fn;
	if (!tried) {
		tried = 1;
		void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (lib) {
			void *sym = dlsym(lib, "__cxa_demangle");
			memcpy(&fn, &sym, sizeof(fn));
		}
	}
	return fn;
}

int demangle_name(const char *mangled, struct strbuf *out)
{
	if (strncmp(mangled, "_Z", 2))
		return -1;
	demangle_fn fn = demangler_find();
	int status = -1;
	char *plain = fn ? fn(mangled, NULL, NULL, &status) : NULL;
	if (!plain || status) {
		free(plain);
		return -1;
	}
	strbuf_addstr(out, plain);
	free(plain);
	return 0;
}
