/* "common/util.h" is common/base/util.h: the spelling stays, the file lives in its layer */
#include "../../common/base/util.h"
