// Embeds the prelude headers with C23 #embed. Each array ends with a 0 byte (so an empty file still
// has a valid initializer); the recorded size excludes it.
#include "embed.h"

static const unsigned char prelude_root[] = {
#embed "prelude/mgsim_prelude.h" suffix(, )
    0};
static const unsigned char prelude_types[] = {
#embed "prelude/mgsim_types.h" suffix(, )
    0};
static const unsigned char prelude_math[] = {
#embed "prelude/mgsim_math.h" suffix(, )
    0};
static const unsigned char prelude_atomic[] = {
#embed "prelude/mgsim_atomic.h" suffix(, )
    0};
static const unsigned char prelude_matrix[] = {
#embed "prelude/mgsim_simdgroup_matrix.h" suffix(, )
    0};
static const unsigned char prelude_exec[] = {
#embed "prelude/mgsim_exec.h" suffix(, )
    0};
static const unsigned char prelude_wi[] = {
#embed "prelude/mgsim_wi.h" suffix(, )
    0};

#define ENTRY(name, arr) {name, arr, sizeof(arr) - 1}

// Every header mgsim_prelude.h includes must be listed here: the cache writes exactly these files.
const struct mgsim_embedded_file mgsim_prelude_files[] = {
    ENTRY("mgsim_prelude.h", prelude_root),
    ENTRY("mgsim_types.h", prelude_types),
    ENTRY("mgsim_math.h", prelude_math),
    ENTRY("mgsim_atomic.h", prelude_atomic),
    ENTRY("mgsim_simdgroup_matrix.h", prelude_matrix),
    ENTRY("mgsim_exec.h", prelude_exec),
    ENTRY("mgsim_wi.h", prelude_wi),
};

const size_t mgsim_prelude_file_count = sizeof(mgsim_prelude_files) / sizeof(mgsim_prelude_files[0]);

// The translator's source: part of every compiled object's cache key, so objects built from an
// older translation (different generated entry points or rewrites) are never reused.
static const unsigned char translator_cpp[] = {
#embed "translate.cpp" suffix(, )
    0};
static const unsigned char translator_h[] = {
#embed "translate.h" suffix(, )
    0};
static const unsigned char workitem_cpp[] = {
#embed "workitem.cpp" suffix(, )
    0};
static const unsigned char workitem_h[] = {
#embed "workitem.h" suffix(, )
    0};
static const unsigned char lex_cpp[] = {
#embed "lex.cpp" suffix(, )
    0};
const struct mgsim_embedded_file mgsim_translator_files[] = {
    ENTRY("translate.cpp", translator_cpp),
    ENTRY("translate.h", translator_h),
};
const size_t mgsim_translator_file_count = sizeof(mgsim_translator_files) / sizeof(mgsim_translator_files[0]);
// The translator's other sources: the work-item generator and the lexer (hashed the same way).
static const unsigned char lex_h[] = {
#embed "lex.h" suffix(, )
    0};
const struct mgsim_embedded_file mgsim_translator_part_files[] = {
    ENTRY("workitem.cpp", workitem_cpp),
    ENTRY("workitem.h", workitem_h),
    ENTRY("lex.cpp", lex_cpp),
    ENTRY("lex.h", lex_h),
};
const size_t mgsim_translator_part_file_count =
    sizeof(mgsim_translator_part_files) / sizeof(mgsim_translator_part_files[0]);
