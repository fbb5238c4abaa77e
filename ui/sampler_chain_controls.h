#pragma once
// The Sampling panel's controls for the samplers beyond the classic six (llama.cpp's names and
// meanings, sampling_params.h): DRY, XTC, top-nσ, Mirostat, logit bias, and the order of the chain
// as a list to reorder (drag, or the Up / Down buttons) whose ticked stages run. They add rows to the
// panel's form and read into / fill from SamplingParams; the panel emits the change.
//
// Logit bias is typed as entries "KEY=BIAS" separated by commas: KEY a token id or a quoted text
// ('text' or "text", every token it encodes to), BIAS a number or -inf (bans the token). A text is
// encoded with the loaded model's tokenizer (setTokenEncoder); an entry that cannot be read leaves
// the last valid biases in force and says why under the field.
#include <functional>
#include <vector>

#include <QHash>
#include <QObject>
#include <QString>

#include "sampling/sampling_params.h"

class ParamControl;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QWidget;

// Encodes a text into token ids without BOS or special tokens; false with *error when it cannot.
using TokenEncoder = std::function<bool(const QString& text, std::vector<int32_t>* ids, QString* error)>;

// Parses a logit-bias field; false with *error (the first bad entry) when it cannot.
bool parseLogitBias(const QString& text, const TokenEncoder& encode, std::vector<wb::LogitBias>* out, QString* error);
// The ids form of a list ("13=-inf, 42=+2.5").
QString formatLogitBias(const std::vector<wb::LogitBias>& biases);
// DRY's sequence breakers as typed: separated by |, "\n" a new line (as the stop strings).
std::vector<std::string> parseBreakers(const QString& text);
QString formatBreakers(const std::vector<std::string>& breakers);

class SamplerChainControls : public QObject {
    Q_OBJECT

public:
    // Adds its rows to `form` (owned by `parent`); make(...) creates each numeric knob as the panel does.
    using MakeControl = std::function<ParamControl*(const QString& name, const QString& label, double lo, double hi,
                                                    double step, int decimals, const QString& tip)>;
    SamplerChainControls(QWidget* parent, QFormLayout* form, const MakeControl& make);

    // Writes the controls' values into p (the logit bias: the last valid entries).
    void read(wb::SamplingParams& p) const;
    // Sets the controls from p without emitting changed.
    void fill(const wb::SamplingParams& p);
    // The logit-bias field as the user typed it (text keys kept), and setting it back (restored
    // settings) without re-encoding: the biases stay those of the params until a model is loaded.
    QString logitBiasText() const;
    void setLogitBiasText(const QString& text);
    void setTokenEncoder(TokenEncoder encode);
    // Encodes the field again (a new model: another vocabulary); emits changed when it reads, and when
    // it does not and biases of the previous vocabulary were in force (they are dropped).
    void reencode();

    QComboBox* mirostatBox() const { return m_mirostat; }
    QLineEdit* breakersEdit() const { return m_breakers; }
    QLineEdit* logitBiasEdit() const { return m_bias; }
    QLabel* logitBiasError() const { return m_biasError; }
    QListWidget* orderList() const { return m_order; }
    QPushButton* upButton() const { return m_up; }
    QPushButton* downButton() const { return m_down; }
    // The ticked stages in list order.
    std::vector<std::string> order() const;
    // Replies come from a remote engine: the breakers' note may show (breakersRemoteNote).
    void setRemote(bool remote);
    // Under the breakers, remote only, while the field is empty: "no breakers" cannot be sent.
    QLabel* breakersRemoteNote() const { return m_breakersRemote; }

Q_SIGNALS:
    void changed();
    // The logit-bias field read without error (what the settings keep).
    void logitBiasAccepted(const QString& text);

private:
    void addSection(const QString& title);
    void fillOrder(const std::vector<std::string>& sequence);
    void moveCurrent(int by);
    void updateBreakersNote();
    // Reads the logit-bias field; false (the error shown) when it does not read.
    bool parseBias();

    QWidget* m_parent;
    QFormLayout* m_form;
    QComboBox* m_mirostat;
    QLineEdit* m_breakers;
    QLabel* m_breakersRemote;
    QLineEdit* m_bias;
    QLabel* m_biasError;
    QListWidget* m_order;
    QPushButton* m_up;
    QPushButton* m_down;
    TokenEncoder m_encode;
    std::vector<wb::LogitBias> m_biases;  // the last valid reading of m_bias
    bool m_filling = false;
    bool m_remote = false;
};
