#pragma once
// The Prompt view: the exact text the model was fed for the current (or last) request, one box per
// token (alternating backgrounds; control tokens in their own colour; text from the user's input in
// another than the template's), each token's position, id and piece on hover; and the chat template
// that rendered it: its source, where it came from (the model's own tokenizer.chat_template, a
// per-model replacement file, a built-in format and why) and its warning or error. It draws the
// values the worker recorded (PromptInfo, ChatTemplateInfo); it never renders or tokenizes itself.
//
// Replace template… keeps a Jinja file or a built-in format for this model file (AppSettings) and
// applies it at once; a file that does not parse is refused with the engine's line and column and not
// kept. "Use the model's own template" forgets the replacement. When the model's own template cannot
// be used, the view offers the built-in formats instead.
#include <QTextFormat>
#include <QWidget>

#include "engine_types.h"

class ChatController;
struct ChatTemplateSetting;
class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTextBrowser;
class QToolButton;

class PromptView : public QWidget {
    Q_OBJECT

public:
    // Set on every token's characters in tokenView()'s document.
    enum Property { TokenIndex = QTextFormat::UserProperty + 1, TokenId, TokenFlags };

    explicit PromptView(ChatController* controller, QWidget* parent = nullptr);

    const PromptInfo& shownPrompt() const { return m_prompt; }
    const ChatTemplateInfo& shownTemplate() const { return m_template; }
    QTextBrowser* tokenView() const { return m_tokens; }
    QLabel* summaryLabel() const { return m_summary; }
    QLabel* templateLabel() const { return m_templateLabel; }
    QLabel* templateProblemLabel() const { return m_problem; }
    QLabel* replaceErrorLabel() const { return m_replaceError; }
    QPlainTextEdit* sourceView() const { return m_source; }
    QPushButton* resetButton() const { return m_reset; }
    QComboBox* fallbackFormats() const { return m_fallback; }

    // The Replace template… choices without their dialogs (tests call them): false, with *error, when
    // refused (nothing is kept then).
    bool replaceWithFile(const QString& path, QString* error);
    bool replaceWithBuiltin(const QString& name, QString* error);
    // Forgets this model's replacement and renders with its own template again.
    void useModelTemplate();

public Q_SLOTS:
    void setPrompt(const PromptInfo& info);
    void setTemplate(const ChatTemplateInfo& info);

private:
    void chooseFile();
    bool apply(const ChatTemplateSetting& setting, QString* error);
    void showReplaceError(const QString& error);
    void renderTokens();
    void renderTemplate();

    ChatController* m_controller;
    PromptInfo m_prompt;
    ChatTemplateInfo m_template;
    QLabel* m_summary;
    QTextBrowser* m_tokens;
    QLabel* m_templateLabel;
    QLabel* m_problem;
    QWidget* m_fallbackRow;
    QComboBox* m_fallback;
    QLabel* m_replaceError;
    QToolButton* m_replace;
    QPushButton* m_reset;
    QPlainTextEdit* m_source;
};
