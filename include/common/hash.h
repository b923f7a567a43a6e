/* "common/hash.h" is common/base/hash.h: the spelling stays, the file lives in its layer */
#include "../../common/base/hash.h"
