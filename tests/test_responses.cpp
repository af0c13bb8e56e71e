#include "http/responses_protocol.hpp"
