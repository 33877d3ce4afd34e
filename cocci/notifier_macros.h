/*
 * Macros for spatch's parser (spatch --macro-file), where its builtin
 * definitions make a kernel file unparsable around a notifier head.
 */
#define DEFINE_PER_CPU(type, name) type name
#define DECLARE_PER_CPU(type, name) extern type name
