// SPDX-License-Identifier: MIT
#include "server/request_types.h"

namespace sniper::server {

ApiError bad_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError status_error(int status, std::string message) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  if (status == 413) e.code = "request_too_large";
  if (status == 503) e.code = "server_busy";
  if (status >= 500) e.type = "server_error";
  return e;
}

}  // namespace sniper::server
