#pragma once
// The one exception type of the engine. Messages are written for the person who has to act on them:
// what was wrong, where (tensor name, key, byte range), and what was expected.
#include <stdexcept>
#include <string>

namespace wb {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace wb
