/* torch_model: the pure pieces of the PyTorch analysis (torch.c): which
 * frames are torch operators and OpenMP runtimes, which Python files are the
 * program's own, and what a Python source says around a line (a loop over a
 * batch's rows, a torch.set_num_threads call, the enclosing function).
 *
 * Source scans read the text as given (any bytes, len bytes, no NUL needed);
 * lines count from 1. They look at Python's layout only (indentation, `for`,
 * `def`), not its grammar: a string that happens to read like code fools them,
 * which costs a missing or extra hint, never a crash. */
#ifndef SONDE_TORCH_MODEL_H
#define SONDE_TORCH_MODEL_H

#include <stddef.h>

struct strbuf;

/* The operator a native frame's function is the entry of, appended to out:
 * "at::_ops::addmm::call(...)" -> "aten::addmm" (also ::redispatch),
 * "torch::autograd::generated::AddmmBackward0::apply(...)" ->
 * "AddmmBackward0". 1 when it is one, else 0 and out unchanged. */
int torch_op_name(const char *function, struct strbuf *out);

/* 1 when module (a path) is an OpenMP runtime: libgomp, libomp, libiomp5. */
int torch_module_is_openmp(const char *module);

/* 1 when module is one of PyTorch's native libraries (libtorch*, libc10*). */
int torch_module_is_torch(const char *module);

/* 1 when a Python frame's file is the program's own code: not the standard
 * library, not an installed package (site-packages, dist-packages), not
 * "<frozen ...>" or "<string>". */
int torch_file_is_own(const char *file);

/* A `for` loop over the rows of a tensor: `for V in range(X.shape[0])`,
 * `range(X.size(0))`, `range(len(X))` whose body indexes X[V]. */
struct torch_row_loop {
	int line;	 /* of the `for` */
	char var[64];	 /* V */
	char tensor[64]; /* X */
};

/* The innermost row loop (above) whose body holds line; 1 and *loop set, or
 * 0 when there is none. */
int torch_row_loop_at(const char *text, size_t len, int line, struct torch_row_loop *loop);

/* The first call of set_num_threads( at or after line `from`, outside a
 * comment and a triple-quoted string: 1 with its line and its argument's
 * text (up to the closing parenthesis, at most 63 bytes) in arg, or 0. */
int torch_set_threads_find(const char *text, size_t len, int from, int *line, char arg[64]);

/* The name of the function (def / async def) whose body holds line,
 * appended to out; 1, or 0 at the module's top level. */
int torch_enclosing_def(const char *text, size_t len, int line, struct strbuf *out);

#endif
