/* "common/lazy_lib.h" is common/base/lazy_lib.h: the spelling stays, the file lives in its layer */
#include "../../common/base/lazy_lib.h"
