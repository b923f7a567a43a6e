/* "common/journal_brotli.h" is common/journal/journal_brotli.h: the spelling stays, the file lives in its layer */
#include "../../common/journal/journal_brotli.h"
