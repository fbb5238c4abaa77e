#include "prompt_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTextBrowser>
#include <QTextCursor>
#include <QToolButton>
#include <QVBoxLayout>

#include "app_settings.h"
#include "chat/chat_template.h"
#include "chat_controller.h"
#include "chat_template_setting.h"
#include "theme.h"

namespace {

QStringList builtinNames() {
    return QString::fromStdString(wb::builtin_chat_format_names()).split(QStringLiteral(", "), Qt::SkipEmptyParts);
}

// What a token's box shows: its text, with a visible mark for line breaks and tabs (an empty box
// would hide them); the real break follows the mark so the layout keeps the prompt's lines.
QString shownPiece(const QString& piece) {
    QString s = piece;
    s.replace(QLatin1Char('\t'), QStringLiteral("\u2192\t"));
    s.replace(QLatin1Char('\n'), QStringLiteral("\u21b5\n"));
    return s;
}

QString originText(const ChatTemplateInfo& t) {
    if (t.origin == QLatin1String("model")) return QObject::tr("the model's own template (tokenizer.chat_template in the GGUF file)");
    if (t.origin == QLatin1String("file")) return QObject::tr("a replacement for this model: %1").arg(t.originDetail);
    if (!t.warning.isEmpty()) return QObject::tr("built-in %1 format: %2").arg(t.originDetail, t.warning);
    return QObject::tr("built-in %1 format, chosen as this model's replacement").arg(t.originDetail);
}

QString tokenTip(int index, int id, const QString& piece, int flags) {
    QString origin;
    if (flags & PromptTokenForced) origin = QObject::tr("a given first token of the reply");
    else if ((flags & PromptTokenFromInput) && (flags & PromptTokenFromTemplate)) origin = QObject::tr("part template, part your input");
    else if (flags & PromptTokenFromInput) origin = QObject::tr("from your input");
    else origin = QObject::tr("from the template");
    const QString kind = (flags & PromptTokenControl) ? QObject::tr("control token") : QObject::tr("text token");
    return QObject::tr("position %1 · id %2 · %3 · %4\npiece: %5")
        .arg(index).arg(id).arg(kind, origin, piece.isEmpty() ? QObject::tr("(empty)") : QStringLiteral("\"%1\"").arg(piece));
}

}  // namespace

PromptView::PromptView(ChatController* controller, QWidget* parent) : QWidget(parent), m_controller(controller) {
    m_summary = new QLabel(tr("No request yet: send a message to see the prompt the model is given."), this);
    m_summary->setWordWrap(true);
    m_tokens = new QTextBrowser(this);
    m_tokens->setObjectName(QStringLiteral("promptTokens"));
    m_tokens->setAccessibleName(tr("Prompt tokens"));
    m_tokens->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_tokens->setOpenLinks(false);
    m_tokens->setMinimumHeight(80);

    m_templateLabel = new QLabel(this);
    m_templateLabel->setWordWrap(true);
    m_templateLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_problem = new QLabel(this);
    m_problem->setWordWrap(true);
    m_problem->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_problem->hide();

    // The explicit choice when the model's own template cannot be used.
    m_fallbackRow = new QWidget(this);
    auto* fallbackLayout = new QHBoxLayout(m_fallbackRow);
    fallbackLayout->setContentsMargins(0, 0, 0, 0);
    m_fallback = new QComboBox(m_fallbackRow);
    m_fallback->addItems(builtinNames());
    m_fallback->setAccessibleName(tr("Built-in format"));
    auto* useFallback = new QPushButton(tr("Use this format"), m_fallbackRow);
    fallbackLayout->addWidget(new QLabel(tr("Use a built-in format instead:"), m_fallbackRow));
    fallbackLayout->addWidget(m_fallback);
    fallbackLayout->addWidget(useFallback);
    fallbackLayout->addStretch();
    m_fallbackRow->hide();
    connect(useFallback, &QPushButton::clicked, this, [this] {
        QString error;
        replaceWithBuiltin(m_fallback->currentText(), &error);
    });

    m_replace = new QToolButton(this);
    m_replace->setText(tr("Replace template…"));
    m_replace->setToolTip(tr("Use a Jinja file or a built-in format for this model file (kept between runs)"));
    m_replace->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(m_replace);
    menu->addAction(tr("From a Jinja file…"), this, &PromptView::chooseFile);
    menu->addSection(tr("Built-in formats"));
    for (const QString& name : builtinNames())
        menu->addAction(name, this, [this, name] {
            QString error;
            replaceWithBuiltin(name, &error);
        });
    m_replace->setMenu(menu);
    m_reset = new QPushButton(tr("Use the model's own template"), this);
    m_reset->setEnabled(false);
    connect(m_reset, &QPushButton::clicked, this, &PromptView::useModelTemplate);
    m_replaceError = new QLabel(this);
    m_replaceError->setWordWrap(true);
    m_replaceError->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_replaceError->hide();
    Theme::setTextColor(m_problem, Theme::Role::Error);
    Theme::setTextColor(m_replaceError, Theme::Role::Error);

    m_source = new QPlainTextEdit(this);
    m_source->setObjectName(QStringLiteral("templateSource"));
    m_source->setAccessibleName(tr("Chat template source"));
    m_source->setReadOnly(true);
    m_source->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_source->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_source->setMinimumHeight(60);

    auto* templateBox = new QWidget(this);
    auto* tl = new QVBoxLayout(templateBox);
    tl->setContentsMargins(0, 0, 0, 0);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_replace);
    buttons->addWidget(m_reset);
    buttons->addStretch();
    tl->addWidget(m_templateLabel);
    tl->addWidget(m_problem);
    tl->addWidget(m_fallbackRow);
    tl->addLayout(buttons);
    tl->addWidget(m_replaceError);
    tl->addWidget(m_source, 1);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_tokens);
    split->addWidget(templateBox);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_summary);
    layout->addWidget(split, 1);

    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, [this] {
        Theme::setTextColor(m_problem, Theme::Role::Error);
        Theme::setTextColor(m_replaceError, Theme::Role::Error);
        renderTokens();
        renderTemplate();
    });
    connect(controller, &ChatController::promptReady, this, &PromptView::setPrompt);
    connect(controller, &ChatController::chatTemplateChanged, this, &PromptView::setTemplate);
    renderTemplate();
}

void PromptView::setPrompt(const PromptInfo& info) {
    m_prompt = info;
    renderTokens();
}

void PromptView::setTemplate(const ChatTemplateInfo& info) {
    m_template = info;
    renderTemplate();
}

void PromptView::renderTokens() {
    const PromptInfo& p = m_prompt;
    int control = 0, input = 0;
    for (int f : p.flags) {
        if (f & PromptTokenControl) ++control;
        if (f & PromptTokenFromInput) ++input;
    }
    if (p.requestId != 0)
        m_summary->setText(tr("Request %1: %2 tokens (%3 control, %4 from your input; %5 reused from the cache), rendered "
                              "with %6. Hover a token for its id.")
                               .arg(p.requestId).arg(p.ids.size()).arg(control).arg(input).arg(p.reused)
                               .arg(p.chatTemplate.description));
    m_tokens->clear();
    QTextCursor cursor(m_tokens->document());
    const QColor boxes[2] = {Theme::color(Theme::Role::PromptTokenA), Theme::color(Theme::Role::PromptTokenB)};
    const QColor controlBox = Theme::color(Theme::Role::PromptControl);
    const QColor controlText = Theme::color(Theme::Role::PromptControlText);
    const QColor inputText = Theme::color(Theme::Role::PromptInput);
    cursor.beginEditBlock();
    for (int i = 0; i < p.ids.size(); ++i) {
        const int flags = i < p.flags.size() ? p.flags[i] : 0;
        QTextCharFormat f;
        f.setProperty(TokenIndex, i);
        f.setProperty(TokenId, p.ids[i]);
        f.setProperty(TokenFlags, flags);
        f.setToolTip(tokenTip(i, p.ids[i], p.pieces.value(i), flags));
        if (flags & PromptTokenControl) {
            f.setBackground(controlBox);
            f.setForeground(controlText);
            f.setFontWeight(QFont::Bold);
        } else {
            f.setBackground(boxes[i % 2]);
            if (flags & PromptTokenFromInput) f.setForeground(inputText);
            // A token that joins template text and input: underlined, so neither origin is claimed.
            if ((flags & PromptTokenFromInput) && (flags & PromptTokenFromTemplate)) f.setFontUnderline(true);
        }
        if (flags & PromptTokenForced) f.setFontItalic(true);
        cursor.insertText(shownPiece(p.pieces.value(i)), f);
    }
    cursor.endEditBlock();
}

void PromptView::renderTemplate() {
    const ChatTemplateInfo& t = m_template;
    if (t.modelPath.isEmpty()) {
        m_templateLabel->setText(tr("Template: no model is loaded."));
    } else {
        QString text = tr("Template: %1 — %2.").arg(t.description, originText(t));
        // The prompt shown was rendered before the template changed.
        if (m_prompt.requestId != 0 && (m_prompt.chatTemplate.source != t.source || m_prompt.chatTemplate.description != t.description))
            text += tr(" The prompt above used the previous template; the next request uses this one.");
        m_templateLabel->setText(text);
    }
    m_problem->setText(t.error.isEmpty() ? QString() : tr("This template cannot be used: %1").arg(t.error));
    m_problem->setVisible(!t.error.isEmpty());
    m_fallbackRow->setVisible(!t.error.isEmpty());
    m_source->setPlainText(t.source.isEmpty() && !t.modelPath.isEmpty() ? tr("(a built-in format: no Jinja source)") : t.source);
    m_reset->setEnabled(!t.modelPath.isEmpty() && !AppSettings::chatTemplate(t.modelPath).isEmpty());
    m_replace->setEnabled(!t.modelPath.isEmpty());
}

void PromptView::chooseFile() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Chat template for this model"), QString(),
                                                      tr("Jinja templates (*.jinja *.j2 *.txt);;All files (*)"));
    QString error;
    if (!path.isEmpty()) replaceWithFile(path, &error);
}

bool PromptView::replaceWithFile(const QString& path, QString* error) {
    const ChatTemplateSetting s = chat_template_setting::fromFile(path, error);
    if (s.isEmpty()) {
        showReplaceError(*error);
        return false;
    }
    return apply(s, error);
}

bool PromptView::replaceWithBuiltin(const QString& name, QString* error) {
    const ChatTemplateSetting s = chat_template_setting::fromBuiltin(name, error);
    if (s.isEmpty()) {
        showReplaceError(*error);
        return false;
    }
    return apply(s, error);
}

void PromptView::useModelTemplate() {
    if (m_template.modelPath.isEmpty()) return;
    AppSettings::setChatTemplate(m_template.modelPath, {});
    showReplaceError(QString());
    m_controller->applyChatTemplate({});
}

bool PromptView::apply(const ChatTemplateSetting& setting, QString* error) {
    // The worker's answer (chatTemplateChanged) names the model it applies to; without a loaded model
    // there is nothing to keep the choice for.
    if (m_template.modelPath.isEmpty() || !m_controller->hasModel()) {
        *error = tr("Load a model first: the replacement is kept per model file.");
        showReplaceError(*error);
        return false;
    }
    AppSettings::setChatTemplate(m_template.modelPath, setting);
    showReplaceError(QString());
    m_controller->applyChatTemplate(setting);
    return true;
}

void PromptView::showReplaceError(const QString& error) {
    m_replaceError->setText(error.isEmpty() ? QString() : tr("Not replaced: %1").arg(error));
    m_replaceError->setVisible(!error.isEmpty());
}
