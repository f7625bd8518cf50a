// The prelude headers, embedded into the library (embed.c) and written to the cache on first use.
#ifndef MGSIM_EMBED_H
#define MGSIM_EMBED_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mgsim_embedded_file {
  const char *name;
  const unsigned char *data;
  size_t size;
};

extern const struct mgsim_embedded_file mgsim_prelude_files[];
extern const size_t mgsim_prelude_file_count;
// The translator's sources (hashed into the compiled-object cache key, never written out).
extern const struct mgsim_embedded_file mgsim_translator_files[];
extern const size_t mgsim_translator_file_count;
extern const struct mgsim_embedded_file mgsim_translator_part_files[];
extern const size_t mgsim_translator_part_file_count;

#ifdef __cplusplus
}
#endif

#endif
