/* "common/conf.h" is common/base/conf.h: the spelling stays, the file lives in its layer */
#include "../../common/base/conf.h"
