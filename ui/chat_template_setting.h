#pragma once
// A per-model replacement of the chat template, as the app keeps it (AppSettings, by model file) and
// hands it to the engine (wb::ChatTemplateChoice). Empty = the model's own template. A replacement is
// checked before it is kept: one that does not parse, or cannot render a one-message chat, is refused
// with the engine's message (line and column), so a broken file is never saved.
#include <QMetaType>
#include <QString>

#include "engine/model.h"
#include "engine_types.h"

struct ChatTemplateSetting {
    QString source;   // a Jinja template (from a file) ...
    QString origin;   // ... and that file's name, for messages
    QString builtin;  // or a built-in format by name ("chatml", ...); empty for none
    bool isEmpty() const { return source.isEmpty() && builtin.isEmpty(); }
};
Q_DECLARE_METATYPE(ChatTemplateSetting)

namespace chat_template_setting {

// What the engine is told; a builtin name it does not know becomes no choice (the model's own).
wb::ChatTemplateChoice toChoice(const ChatTemplateSetting& s);
// Reads a Jinja file and checks it (check()); on any problem *error says what and the result is empty.
ChatTemplateSetting fromFile(const QString& path, QString* error);
// A built-in format by name; an unknown name is an error naming the known ones.
ChatTemplateSetting fromBuiltin(const QString& name, QString* error);
// Empty when the source parses and renders a chat of one user message; else the engine's error.
QString check(const QString& source);
// The stored choice for a model file (AppSettings), "" path = none.
ChatTemplateSetting stored(const QString& modelPath);
// How `t`, chosen for modelPath with `s`, is shown (the Prompt view).
ChatTemplateInfo describe(const wb::ChatTemplate& t, const ChatTemplateSetting& s, const QString& modelPath);

}  // namespace chat_template_setting
