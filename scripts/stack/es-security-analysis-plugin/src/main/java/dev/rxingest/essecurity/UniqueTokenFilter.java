package dev.rxingest.essecurity;

import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute;

import java.io.IOException;

/** Drops a token whose term was seen before (in the stream, or at the same position only). */
final class UniqueTokenFilter extends TokenFilter {
    private final CharTermAttribute term = addAttribute(CharTermAttribute.class);
    private final PositionIncrementAttribute posInc = addAttribute(PositionIncrementAttribute.class);
    private final CharArraySet seen = new CharArraySet(8, false);
    private final boolean onlyOnSamePosition;

    UniqueTokenFilter(TokenStream in, boolean onlyOnSamePosition) {
        super(in);
        this.onlyOnSamePosition = onlyOnSamePosition;
    }

    @Override
    public boolean incrementToken() throws IOException {
        while (input.incrementToken()) {
            if (onlyOnSamePosition && posInc.getPositionIncrement() > 0) seen.clear();
            char[] buffer = term.buffer();
            int length = term.length();
            if (seen.contains(buffer, 0, length)) continue;
            char[] copy = new char[length];
            System.arraycopy(buffer, 0, copy, 0, length);
            seen.add(copy);
            return true;
        }
        return false;
    }

    @Override
    public void reset() throws IOException {
        super.reset();
        seen.clear();
    }
}
