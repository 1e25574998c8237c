/* pyframes: the CPython interpreter's frames and its evaluation machinery. */
#include "pyframes.h"

#include <string.h>

int pyframes_is_interpreter(const char *module)
{
	if (!module)
		return 0;
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	return !strncmp(base, "libpython", 9) || !strncmp(base, "python", 6);
}

int pyframes_is_machinery(const char *fn)
{
	/* Prefixes, CPython 3.8 to 3.13: evaluation, call dispatch, frames, entry. */
	static const char *const prefixes[] = {
		"_PyEval_", "PyEval_", "_PyEvalFrame", "_PyFunction_", "function_code_fastcall",
		"_PyObject_Vectorcall", "PyObject_Vectorcall", "_PyObject_Call", "PyObject_Call",
		"_PyObject_FastCall", "_PyObject_MakeTpCall", "PyVectorcall_Call",
		"_PyVectorcall_Call", "method_vectorcall", "cfunction_vectorcall", "cfunction_call",
		"call_function", "do_call_core", "slot_tp_call", "vectorcall_", "method_call",
		"_Py_CheckFunctionResult", "_PyFrame_", "PyFrame_New", "frame_dealloc",
		"clear_thread_frame", "Py_RunMain", "Py_BytesMain", "Py_Main", "pymain_", "_PyRun_",
		"PyRun_", "run_mod", "run_eval_code_obj", "builtin_exec", "builtin_eval",
		"exec_code_in_module", "_PyImport_", "PyImport_", "import_find_and_load",
		"thread_run", "t_bootstrap", NULL,
	};
	if (!fn)
		return 0;
	if (!strcmp(fn, "main"))
		return 1;
	for (size_t i = 0; prefixes[i]; i++)
		if (!strncmp(fn, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}
