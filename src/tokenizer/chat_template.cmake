# SPDX-License-Identifier: MIT
# Chat template sources (a Jinja2-subset interpreter). The tokenizer library compiles them via
# SNIPER_CHAT_TEMPLATE_SOURCES; sniper_chat_template builds them alone for their own tests.
set(SNIPER_CHAT_TEMPLATE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/chat_template.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_string.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_value.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_lexer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_parser.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_eval.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_filters.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_tests.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jinja_methods.cpp)

add_library(sniper_chat_template STATIC ${SNIPER_CHAT_TEMPLATE_SOURCES})
target_link_libraries(sniper_chat_template PUBLIC nlohmann_json::nlohmann_json sniper_base)

# sniper_tokenizer (defined after this file is included) compiles the same sources, so it needs
# the JSON headers too; deferred until the end of the directory where that target exists.
cmake_language(DEFER CALL target_link_libraries sniper_tokenizer PUBLIC nlohmann_json::nlohmann_json)
