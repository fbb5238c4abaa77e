#pragma once
// The Sampling panel's "Constrain output" group: a mode (None, GBNF, JSON Schema), the text of the
// grammar or schema, and ready examples. The text is compiled as it is typed (a schema to GBNF, then
// parsed as the engine will), so an error is shown under the editor with its line and column (or its
// place in the schema) before any generation starts. Only a text that compiles is applied: while it
// does not, the last one that did stays in force, as with the logit bias. The GBNF in force is what
// read() puts into SamplingParams::grammar (during a reply the engine applies a changed grammar from the
// next token if the reply so far parses under it, and otherwise refuses it: showNotice says why);
// the mode and the text as typed, compiling or not, go into grammar_mode and grammar_source, so
// settings, presets and conversations give the editor back what the user wrote.
#include <string>

#include <QObject>
#include <QString>

#include "sampling/sampling_params.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QPlainTextEdit;
class QWidget;

class GrammarControls : public QObject {
    Q_OBJECT

public:
    using Mode = wb::GrammarMode;

    // Adds its rows to `form` (owned by `parent`).
    GrammarControls(QWidget* parent, QFormLayout* form);

    // Writes the grammar in force, the mode and the text into p.
    void read(wb::SamplingParams& p) const;
    // Shows p's mode and text, with the error of a text that does not compile, and takes p's grammar
    // as the one in force, without emitting changed. A grammar with no text (from before the text was
    // kept) is shown as its GBNF.
    void fill(const wb::SamplingParams& p);
    // Chooses a mode and text as the user would (emits changed).
    void setSource(Mode mode, const QString& text);
    // Shows why the engine refused the grammar chosen during a reply (above the mode, whatever the mode
    // is), until the next change of mode or text or the next fill().
    void showNotice(const QString& text);
    // Loads example `index` of exampleBox() (1 .. its count - 1; 0 is the box's title).
    void loadExample(int index);

    // The GBNF `text` compiles to in `mode` ("" for None or a blank text); wb::Error when it does not.
    static std::string compileSource(Mode mode, const std::string& text);
    // The Examples box's entry titled `title` (untranslated); false when this build has none (a JSON
    // Schema without the converter).
    static bool findExample(const char* title, Mode* mode, QString* text);

    Mode mode() const;
    QComboBox* modeBox() const { return m_mode; }
    QComboBox* exampleBox() const { return m_examples; }
    QPlainTextEdit* editor() const { return m_editor; }
    QLabel* errorLabel() const { return m_error; }
    QLabel* noticeLabel() const { return m_notice; }
    // The GBNF in force ("" = none).
    const std::string& grammar() const { return m_grammar; }

Q_SIGNALS:
    // The mode or text changed (whether or not the grammar in force did).
    void changed();

private:
    void compile();
    // The GBNF the text compiles to in the current mode ("" for none); a message when it does not.
    std::string compiled(QString* error) const;
    void showError(const QString& error);
    void updateVisibility();

    QComboBox* m_mode;
    QComboBox* m_examples;
    QPlainTextEdit* m_editor;
    QLabel* m_error;
    QLabel* m_notice;
    std::string m_grammar;  // the last text that compiled, as GBNF
    bool m_filling = false;
};
