/* "common/resource_impl.h" is common/resource/resource_impl.h: the spelling stays, the file lives in its layer */
#include "../../common/resource/resource_impl.h"
