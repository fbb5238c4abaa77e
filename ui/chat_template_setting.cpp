#include "chat_template_setting.h"

#include <QFile>
#include <QFileInfo>
#include <QObject>

#include "app_settings.h"
#include "chat/chat_template.h"

namespace chat_template_setting {

wb::ChatTemplateChoice toChoice(const ChatTemplateSetting& s) {
    wb::ChatTemplateChoice c;
    if (!s.builtin.isEmpty()) {
        c.builtin = wb::builtin_chat_format(s.builtin.toStdString());
    } else if (!s.source.isEmpty()) {
        c.jinja_source = s.source.toStdString();
        c.jinja_origin = s.origin.toStdString();
    }
    return c;
}

QString check(const QString& source) {
    try {
        // Placeholder BOS/EOS texts: only whether the template parses and renders is asked here.
        const wb::ChatTemplate t = wb::ChatTemplate::from_jinja(source.toStdString(), "<s>", "</s>");
        t.render({{"user", "Hello"}}, true);
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

ChatTemplateSetting fromFile(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QObject::tr("Cannot read %1: %2").arg(path, f.errorString());
        return {};
    }
    // Real templates are a few kB; a file far beyond that is not a template.
    constexpr qint64 kMaxBytes = 1 << 20;
    if (f.size() > kMaxBytes) {
        *error = QObject::tr("%1 is %2 bytes; a chat template is at most %3").arg(path).arg(f.size()).arg(kMaxBytes);
        return {};
    }
    ChatTemplateSetting s;
    s.source = QString::fromUtf8(f.readAll());
    s.origin = QFileInfo(path).fileName();
    if (s.source.trimmed().isEmpty()) {
        *error = QObject::tr("%1 is empty").arg(path);
        return {};
    }
    const QString problem = check(s.source);
    if (!problem.isEmpty()) {
        *error = QObject::tr("%1: %2").arg(s.origin, problem);
        return {};
    }
    return s;
}

ChatTemplateSetting fromBuiltin(const QString& name, QString* error) {
    if (!wb::builtin_chat_format(name.toStdString())) {
        *error = QObject::tr("There is no built-in format \"%1\" (the formats: %2)")
                     .arg(name, QString::fromStdString(wb::builtin_chat_format_names()));
        return {};
    }
    ChatTemplateSetting s;
    s.builtin = name;
    return s;
}

ChatTemplateSetting stored(const QString& modelPath) {
    return modelPath.isEmpty() ? ChatTemplateSetting{} : AppSettings::chatTemplate(modelPath);
}

ChatTemplateInfo describe(const wb::ChatTemplate& t, const ChatTemplateSetting& s, const QString& modelPath) {
    ChatTemplateInfo info;
    info.modelPath = modelPath;
    info.description = QString::fromStdString(t.description());
    info.source = QString::fromStdString(t.source());
    info.warning = QString::fromStdString(t.warning());
    info.error = QString::fromStdString(t.error());
    if (!s.builtin.isEmpty()) {
        info.origin = QStringLiteral("builtin");
        info.originDetail = s.builtin;
    } else if (!s.source.isEmpty()) {
        info.origin = QStringLiteral("file");
        info.originDetail = s.origin;
    } else {
        // The model's own, or (no template in the file) its family's built-in format: warning() says which.
        info.origin = t.kind() == wb::ChatTemplateKind::JINJA ? QStringLiteral("model") : QStringLiteral("builtin");
        info.originDetail = t.kind() == wb::ChatTemplateKind::JINJA ? QString()
                                                                     : QString::fromLatin1(wb::chat_template_kind_name(t.kind()));
    }
    return info;
}

}  // namespace chat_template_setting
