/* demangle: C++ names as people read them.
 *
 * Demangles an Itanium C++ name ("_ZN3foo3barEv" -> "foo::bar()") with
 * libstdc++'s __cxa_demangle, loaded at run time: sonde stays a C program with
 * no C++ dependency, and C++ (and legacy Rust) names, native frames' and GPU
 * kernels' alike, still read well. */
#ifndef SONDE_DEMANGLE_H
#define SONDE_DEMANGLE_H

struct strbuf;

/* Appends the plain name to out and returns 0; -1 (out untouched) when name
 * is not mangled or no demangler is found. */
int demangle_name(const char *name, struct strbuf *out);

#endif
