/* pass_list: the registry of derive passes, one line each: DERIVE_PASS(name)
 * for the `const struct derive_pass derive_name` its file defines
 * (derive.h). Included by passes.c only; the passes run in the order of
 * what they read and write (derive_order), not of these lines. */
DERIVE_PASS(process_keys)
DERIVE_PASS(pystitch)
DERIVE_PASS(syscall_python)
