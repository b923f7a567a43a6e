/* "common/journal_impl.h" is common/journal/journal_impl.h: the spelling stays, the file lives in its layer */
#include "../../common/journal/journal_impl.h"
