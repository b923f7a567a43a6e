/* "common/journal.h" is common/journal/journal.h: the spelling stays, the file lives in its layer */
#include "../../common/journal/journal.h"
