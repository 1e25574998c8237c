/* cpython_offsets: prints one cpython_layout initializer for the CPython whose
 * internal headers this is compiled against (tools/gen_cpython_layouts.sh).
 * Build only with -DPy_BUILD_CORE and that version's include directories. */
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#if PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#else
#include <internal/pycore_pystate.h>
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#endif
#if PY_VERSION_HEX >= 0x030C0000
#include <internal/pycore_ceval_state.h>
#endif
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_dict.h>
#else
/* Objects/dict-common.h is not installed before 3.11; its keys object there: */
struct dictkeys_310 {
	Py_ssize_t dk_refcnt;
	Py_ssize_t dk_size;
	void *dk_lookup;
	Py_ssize_t dk_usable;
	Py_ssize_t dk_nentries;
	char dk_indices[];
};
#endif
#if PY_VERSION_HEX >= 0x030A0000
#include <internal/pycore_moduleobject.h>
#endif

#define F(name, val) printf("\t\t.%s = %lld,\n", name, (long long)(val))

int main(void)
{
	printf("\t{\n\t\t.major = %d, .minor = %d,\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	printf("\t\t/* generated from CPython %s headers */\n", PY_VERSION);
	F("runtime_interp_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030C0000
	F("runtime_tstate_current", offsetof(_PyRuntimeState, gilstate.tstate_current));
#else
	F("runtime_tstate_current", -1);
#endif
	F("interp_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030B0000
	F("interp_tstate_head", offsetof(PyInterpreterState, threads.head));
#else
	F("interp_tstate_head", offsetof(PyInterpreterState, tstate_head));
#endif
#if PY_VERSION_HEX >= 0x030C0000
	F("interp_gil", offsetof(PyInterpreterState, ceval.gil));
	F("runtime_gil", -1);
#else
	F("interp_gil", -1);
	F("runtime_gil", offsetof(_PyRuntimeState, ceval.gil));
#endif
	F("gil_locked", offsetof(struct _gil_runtime_state, locked));
	F("gil_last_holder", offsetof(struct _gil_runtime_state, last_holder));
	F("gil_switch_number", offsetof(struct _gil_runtime_state, switch_number));
	F("tstate_size", sizeof(PyThreadState));
	F("tstate_next", offsetof(PyThreadState, next));
	F("tstate_interp", offsetof(PyThreadState, interp));
#if PY_VERSION_HEX >= 0x030D0000
	F("tstate_frame", offsetof(PyThreadState, current_frame));
	F("tstate_cframe", -1);
	F("cframe_current_frame", -1);
#elif PY_VERSION_HEX >= 0x030B0000
	F("tstate_frame", -1);
	F("tstate_cframe", offsetof(PyThreadState, cframe));
	F("cframe_current_frame", offsetof(_PyCFrame, current_frame));
#else
	F("tstate_frame", offsetof(PyThreadState, frame));
	F("tstate_cframe", -1);
	F("cframe_current_frame", -1);
#endif
	F("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030B0000
	F("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
#else
	F("tstate_native_thread_id", -1);
#endif
#if PY_VERSION_HEX >= 0x030B0000
	F("frame_size", sizeof(_PyInterpreterFrame));
	F("frame_back", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX >= 0x030D0000
	F("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	F("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
	F("frame_code", offsetof(_PyInterpreterFrame, f_code));
	F("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
	F("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030C0000
	F("frame_owner_cstack", FRAME_OWNED_BY_CSTACK);
	F("frame_is_entry", -1);
#else
	F("frame_owner_cstack", -1);
	F("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
	F("frame_lasti", -1);
#else
	F("frame_size", sizeof(PyFrameObject));
	F("frame_back", offsetof(PyFrameObject, f_back));
	F("frame_code", offsetof(PyFrameObject, f_code));
	F("frame_instr", -1);
	F("frame_owner", -1);
	F("frame_owner_cstack", -1);
	F("frame_is_entry", -1);
	F("frame_lasti", offsetof(PyFrameObject, f_lasti));
#endif
#if PY_VERSION_HEX >= 0x030B0000
	F("frame_state", -1);
	F("frame_state_executing", -1);
#elif PY_VERSION_HEX >= 0x030A0000
	F("frame_state", offsetof(PyFrameObject, f_state));
	F("frame_state_executing", FRAME_EXECUTING);
#else
	F("frame_state", offsetof(PyFrameObject, f_executing));
	F("frame_state_executing", 1);
#endif
	F("code_size", sizeof(PyCodeObject));
	F("code_filename", offsetof(PyCodeObject, co_filename));
	F("code_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030B0000
	F("code_qualname", offsetof(PyCodeObject, co_qualname));
	F("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#else
	F("code_qualname", -1);
	F("code_adaptive", -1);
#endif
	F("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
	F("code_linetable", offsetof(PyCodeObject, co_linetable));
#else
	F("code_linetable", offsetof(PyCodeObject, co_lnotab));
#endif
	/* before 3.11, the class of a method's self or cls (no co_qualname) */
#if PY_VERSION_HEX >= 0x030B0000
	F("code_varnames", -1);
	F("frame_localsplus", -1);
#else
	F("code_varnames", offsetof(PyCodeObject, co_varnames));
	F("frame_localsplus", offsetof(PyFrameObject, f_localsplus));
#endif
	F("tuple_item", offsetof(PyTupleObject, ob_item));
	F("unicode_state", offsetof(PyASCIIObject, state));
	F("unicode_length", offsetof(PyASCIIObject, length));
	F("unicode_ascii_size", sizeof(PyASCIIObject));
	F("unicode_compact_size", sizeof(PyCompactUnicodeObject));
	F("bytes_size", offsetof(PyVarObject, ob_size));
	F("bytes_sval", offsetof(PyBytesObject, ob_sval));
	F("object_type", offsetof(PyObject, ob_type));
	F("type_name", offsetof(PyTypeObject, tp_name));
	/* reading threading's thread names: sys.modules, dicts, instance attributes */
#if PY_VERSION_HEX >= 0x030C0000
	F("interp_modules", offsetof(PyInterpreterState, imports.modules));
#else
	F("interp_modules", offsetof(PyInterpreterState, modules));
#endif
	F("type_basicsize", offsetof(PyTypeObject, tp_basicsize));
	F("type_flags", offsetof(PyTypeObject, tp_flags));
	F("type_dictoffset", offsetof(PyTypeObject, tp_dictoffset));
	F("heaptype_cached_keys", offsetof(PyHeapTypeObject, ht_cached_keys));
#if PY_VERSION_HEX >= 0x030A0000
	F("module_dict", offsetof(PyModuleObject, md_dict));
#else
	F("module_dict", sizeof(PyObject)); /* Objects/moduleobject.c: right after the header */
#endif
	F("dict_keys", offsetof(PyDictObject, ma_keys));
	F("dict_values", offsetof(PyDictObject, ma_values));
#if PY_VERSION_HEX >= 0x030B0000
	F("keys_size", offsetof(PyDictKeysObject, dk_log2_size));
	F("keys_log2_index_bytes", offsetof(PyDictKeysObject, dk_log2_index_bytes));
	F("keys_kind", offsetof(PyDictKeysObject, dk_kind));
	F("keys_nentries", offsetof(PyDictKeysObject, dk_nentries));
	F("keys_indices", offsetof(PyDictKeysObject, dk_indices));
	F("values_values", offsetof(PyDictValues, values));
#else
	F("keys_size", offsetof(struct dictkeys_310, dk_size));
	F("keys_log2_index_bytes", -1);
	F("keys_kind", -1);
	F("keys_nentries", offsetof(struct dictkeys_310, dk_nentries));
	F("keys_indices", offsetof(struct dictkeys_310, dk_indices));
	F("values_values", 0); /* ma_values is the PyObject *[] itself */
#endif
#if PY_VERSION_HEX >= 0x030C0000
	F("long_size", offsetof(PyLongObject, long_value.lv_tag));
	F("long_digit", offsetof(PyLongObject, long_value.ob_digit));
#else
	F("long_size", offsetof(PyVarObject, ob_size));
	F("long_digit", offsetof(PyLongObject, ob_digit));
#endif
	printf("\t},\n");
	return 0;
}
