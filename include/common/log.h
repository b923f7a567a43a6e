/* "common/log.h" is common/base/log.h: the spelling stays, the file lives in its layer */
#include "../../common/base/log.h"
