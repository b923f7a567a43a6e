/* "common/housekeeping.h" is common/stage/housekeeping.h: the spelling stays, the file lives in its layer */
#include "../../common/stage/housekeeping.h"
