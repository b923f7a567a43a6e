/* "common/spool.h" is common/store/spool.h: the spelling stays, the file lives in its layer */
#include "../../common/store/spool.h"
